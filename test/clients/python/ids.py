"""psycopg 3 and Snowflake ids: bigint arrives as a Python int, which is exact at any size.

Connects with the PG* environment variables; exits non-zero on the first mismatch.
"""
import json

import psycopg

ROWS = 1000
EPOCH_MS = 1288834974657


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


if __name__ == "__main__":
    main()
