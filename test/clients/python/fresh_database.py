"""A fresh database with the extension, for the clients that make their own (psycopg2)."""
import psycopg2


def make_database(name, *statements):
    """Drops and creates the database as the PG* variables' superuser, creates the extension in
    it, then runs the statements there."""
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")
    admin.close()
    with psycopg2.connect(dbname=name) as database, database.cursor() as cursor:
        cursor.execute("CREATE EXTENSION snowflake")
        for statement in statements:
            cursor.execute(statement)
