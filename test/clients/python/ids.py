"""psycopg 3 and Snowflake ids: bigint arrives as a Python int, which is exact at any size.

The snowflake type, whose OID psycopg does not know, arrives as a str unless an int loader is
registered for it. A tracked table (1.12) is followed too, into a dict keyed by int ids. Connects
with the PG* environment variables; exits non-zero on the first mismatch.
"""
import json

import psycopg
from psycopg.types import TypeInfo
from psycopg.types.numeric import IntLoader

ROWS = 1000
EPOCH_MS = 1288834974657
PAGE = 3


def decode_locally(snowflake_id):
    """The fields of an id, computed here, to compare with snowflake_decode()."""
    return (
        (snowflake_id >> 22) + EPOCH_MS,
        (snowflake_id >> 17) & 31,
        (snowflake_id >> 12) & 31,
        snowflake_id & 4095,
    )


def main():
    with psycopg.connect() as connection:
        connection.execute("DROP TABLE IF EXISTS python_ids")
        connection.execute(
            "CREATE TABLE python_ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),"
            " label text NOT NULL)")
        ids = [row[0] for row in connection.execute(
            "INSERT INTO python_ids (label) SELECT 'row ' || g FROM generate_series(1, %s) g"
            " RETURNING id", (ROWS,))]
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO python_ids (label) VALUES ('single') RETURNING id")
            ids.append(cursor.fetchone()[0])
        assert len(set(ids)) == ROWS + 1, "every id is distinct"
        assert all(type(i) is int for i in ids), "bigint arrives as int"
        for snowflake_id in ids:
            row = connection.execute(
                "SELECT id, id::text, d.unix_ms, d.datacenter_id, d.machine_id, d.sequence"
                " FROM python_ids, snowflake_decode(id) d WHERE id = %s",
                (snowflake_id,)).fetchone()
            assert row is not None, f"the row of id {snowflake_id} is found by its id"
            assert row[0] == snowflake_id and row[1] == str(snowflake_id), \
                f"id {snowflake_id} reads back exactly"
            assert tuple(row[2:]) == decode_locally(snowflake_id), \
                f"id {snowflake_id} decodes the same here and in the server"
        # JSON: Python's json module keeps integers exact; clients in other languages may not,
        # so an API sends the id as a string.
        exact = connection.execute(
            "SELECT json_build_object('id', id::text)::text FROM python_ids WHERE id = %s",
            (ids[0],)).fetchone()[0]
        assert json.loads(exact)["id"] == str(ids[0]), "id::text in JSON stays exact"
    print(f"psycopg {psycopg.__version__}: {len(ids)} ids exact as int")
    check_snowflake_type()
    follow_changes()


def check_snowflake_type():
    """The snowflake type as the key: a str by default, an int with one registered loader."""
    with psycopg.connect() as connection:
        connection.execute("DROP TABLE IF EXISTS python_typed_ids")
        connection.execute(
            "CREATE TABLE python_typed_ids (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(),"
            " legacy_id bigint, label text NOT NULL)")
        inserted = connection.execute(
            "INSERT INTO python_typed_ids (label) SELECT 'row ' || g"
            " FROM generate_series(1, %s) g RETURNING id, id::text", (ROWS + 1,)).fetchall()
        connection.execute("UPDATE python_typed_ids SET legacy_id = id")
        ids = [row[0] for row in inserted]
        assert all(type(i) is str and i == text for i, text in inserted), \
            "an unknown type arrives as its text, a str"
        assert all(int(i) > 2 ** 53 for i in ids), "every id is above 2^53"
        assert len(set(ids)) == ROWS + 1, "every id is distinct"
        with connection.cursor(binary=True) as cursor:
            raw = cursor.execute("SELECT id, legacy_id FROM python_typed_ids").fetchall()
        assert all(type(r[0]) is bytes and int.from_bytes(r[0], "big") == r[1] for r in raw), \
            "in binary, the type arrives as bigint's eight bytes, undecoded"
        found = connection.execute(
            "SELECT id FROM python_typed_ids WHERE id = ANY(%s)", (ids,)).fetchall()
        assert sorted(r[0] for r in found) == sorted(ids), "the strings sent back find each row"
        # JSON: the type is a string; Python's json keeps the bigint exact too.
        documents = connection.execute(
            "SELECT id::text, row_to_json(t) FROM python_typed_ids t").fetchall()
        assert all(d["id"] == text and d["legacy_id"] == int(text) for text, d in documents), \
            "row_to_json writes the type as a string, exact"
        # max() keeps the type (1.9): a str like the key, and a string in JSON.
        top, top_json = connection.execute(
            "SELECT m.max, row_to_json(m) FROM (SELECT max(id) FROM python_typed_ids) AS m"
        ).fetchone()
        assert top == max(ids, key=int) and top_json == {"max": top}, \
            "max(id) of the type is the largest id, a str, and a string in JSON"

    with psycopg.connect() as connection:
        # The line for an application: the type's OID differs between databases, so look it up.
        connection.adapters.register_loader(TypeInfo.fetch(connection, "snowflake").oid, IntLoader)
        rows = connection.execute(
            "SELECT id, legacy_id, id::text FROM python_typed_ids").fetchall()
        assert all(type(i) is int and i == legacy and str(i) == text for i, legacy, text in rows), \
            "with IntLoader registered for its OID, the type arrives as an exact int"
        found = connection.execute(
            "SELECT count(*) FROM python_typed_ids WHERE id = ANY(%s)",
            ([r[0] for r in rows],)).fetchone()[0]
        assert found == ROWS + 1, "the ints sent back find each row"
    print(f"psycopg {psycopg.__version__}: snowflake type, {len(ids)} ids exact as str by default,"
          " as int with IntLoader registered for its OID")


class Follower:
    """A copy of a tracked table by id, kept as an application keeps it: from pages of changes."""

    def __init__(self, connection, table):
        self.connection, self.table = connection, table
        self.copy, self.cursor, self.changes = {}, 0, 0

    def catch_up(self, past=-1):
        """Applies pages until one is not full (nothing below the settled bound is left) and the
        cursor is past `past`."""
        while True:
            page = self.connection.execute(
                f"SELECT version, kind, (data).id, (data).note"
                f" FROM snowflake_changes(NULL::{self.table}, %s, {PAGE})",
                (self.cursor,)).fetchall()
            for version, kind, row_id, note in page:
                if kind == "row":
                    self.copy[row_id] = note
                elif kind == "delete":
                    self.copy.pop(row_id, None)
                elif kind == "truncate":
                    self.copy.clear()
                else:
                    self.cursor = version
            self.changes += len(page) - 1
            if len(page) - 1 < PAGE and self.cursor > past:
                return


def follow_changes():
    """Following changes (1.12): while two other connections write, one of them in a transaction
    left open (holding the settled bound) as later ones commit, the changes applied to a dict by
    id must rebuild the table, deletes, a key change and a TRUNCATE included."""
    with psycopg.connect(autocommit=True) as reader, psycopg.connect(autocommit=True) as writer, \
            psycopg.connect(autocommit=True) as holder:
        reader.execute("DROP TABLE IF EXISTS follow_python")
        reader.execute("CREATE TABLE follow_python (id bigint PRIMARY KEY"
                       " DEFAULT snowflake_nextval(), note text)")
        reader.execute("SELECT snowflake_track_changes('follow_python')")
        follower = Follower(reader, "follow_python")
        writer.execute("INSERT INTO follow_python (note)"
                       " SELECT 'first ' || g FROM generate_series(1, 7) g")
        follower.catch_up()
        with holder.transaction():
            holder.execute("INSERT INTO follow_python (note) VALUES ('held open')")
            writer.execute("UPDATE follow_python SET note = note || ' edited'"
                           " WHERE note IN ('first 1', 'first 4')")
            writer.execute(
                "UPDATE follow_python SET id = snowflake_nextval() WHERE note = 'first 2'")
            writer.execute("DELETE FROM follow_python WHERE note IN ('first 3', 'first 5')")
            follower.catch_up()
        follower.catch_up()
        writer.execute("TRUNCATE follow_python")
        writer.execute("INSERT INTO follow_python (note)"
                       " SELECT 'second ' || g FROM generate_series(1, 6) g")
        follower.catch_up()
        writer.execute("UPDATE follow_python SET note = 'second 1 edited' WHERE note = 'second 1'")
        writer.execute("UPDATE follow_python SET id = snowflake_nextval() WHERE note = 'second 2'")
        writer.execute("DELETE FROM follow_python WHERE note IN ('second 3', 'second 4')")
        last = reader.execute(
            "SELECT max(version) FROM (SELECT version FROM follow_python UNION ALL"
            " SELECT version FROM snowflake_catalog.snowflake_tombstones"
            " WHERE tracked = 'follow_python'::regclass)"
            " AS changes").fetchone()[0]
        follower.catch_up(last)
        table = dict(reader.execute("SELECT id, note FROM follow_python").fetchall())
        assert follower.copy == table, \
            f"the copy built from the changes equals the table: {follower.copy} != {table}"
    print(f"psycopg {psycopg.__version__}: followed {follower.changes} changes, copy equals the"
          f" table ({len(table)} rows)")


if __name__ == "__main__":
    main()
