"""Alembic's autogenerate beside the extension (1.12): it proposes no change for the extension.

The extension's tables live in snowflake_catalog, which autogenerate does not read, and the view
left for older scripts is no table to it. A database with a setup of time partitions and a
tracked table is compared with the application's own metadata: the table, its version column and
index that snowflake_track_changes() added. Before 1.12 autogenerate proposed dropping the
extension's tables. Connects with the PG* environment variables to a database it makes; exits
non-zero on any proposal.
"""
import psycopg2
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import BigInteger, Column, Index, MetaData, Table, Text, create_engine, text

DATABASE = "alembic_compare"


def make_database():
    """A fresh database with the extension, a setup of time partitions and a tracked table."""
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    admin.close()
    with psycopg2.connect(dbname=DATABASE) as database, database.cursor() as cursor:
        cursor.execute("CREATE EXTENSION snowflake")
        cursor.execute("CREATE SCHEMA timeline")
        cursor.execute("CREATE TABLE timeline.events (id bigint NOT NULL"
                       " DEFAULT snowflake_nextval() PRIMARY KEY) PARTITION BY RANGE (id)")
        cursor.execute(
            "SELECT count(*) FROM snowflake_partition_table('timeline.events', '1 day', 1)")
        cursor.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),"
                       " note text)")
        cursor.execute("SELECT snowflake_track_changes('orders')")


def main():
    make_database()
    metadata = MetaData()
    Table("orders", metadata,
          Column("id", BigInteger, primary_key=True, server_default=text("snowflake_nextval()")),
          Column("note", Text),
          Column("version", BigInteger),
          Index("orders_version_idx", "version"))
    engine = create_engine(f"postgresql+psycopg2:///{DATABASE}")
    with engine.connect() as connection:
        proposals = compare_metadata(MigrationContext.configure(connection), metadata)
    assert not proposals, f"autogenerate proposes changes for the extension: {proposals}"
    print("alembic 1.8: autogenerate proposes nothing beside the extension's tables and setups")


if __name__ == "__main__":
    main()
