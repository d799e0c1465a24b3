"""Alembic's autogenerate beside the extension (1.12): it proposes no change for the extension.

The extension's tables live in snowflake_catalog, which autogenerate does not read, and the view
left for older scripts is no table to it. A database with a setup of time partitions and a
tracked table is compared with the application's own metadata: the table, its version column and
index that snowflake_track_changes() added. Before 1.12 autogenerate proposed dropping the
extension's tables. Connects with the PG* environment variables to a database it makes; exits
non-zero on any proposal.
"""
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import BigInteger, Column, Index, MetaData, Table, Text, create_engine, text

from fresh_database import make_database

DATABASE = "alembic_compare"


def main():
    # A setup of time partitions and a tracked table.
    make_database(
        DATABASE, "CREATE SCHEMA timeline",
        "CREATE TABLE timeline.events (id bigint NOT NULL DEFAULT snowflake_nextval() PRIMARY KEY)"
        " PARTITION BY RANGE (id)",
        "SELECT count(*) FROM snowflake_partition_table('timeline.events', '1 day', 1)",
        "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text)",
        "SELECT snowflake_track_changes('orders')")
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
