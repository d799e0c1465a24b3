"""Django 3.2 and the recipe's key (doc/reference.md "ORMs and frameworks"), through migrate.

The shop app's keys come from its default_auto_field, shop.fields.SnowflakeAutoField, with one
RunSQL per table for the default; later migrations of the table and of the key leave the default
alone.

The legacy app's key was made by the recipe of 1.11 (a BigAutoField and snowflake_convert_column)
and moves to the field. Its last migration is the trap the field avoids: a BigAutoField again,
whose sequence replaces the default. The server warns, and the warning's step gives the key ids
again. Connects with the PG* environment variables to a database it makes; exits non-zero on the
first mismatch.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import django  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from fresh_database import make_database  # noqa: E402

DATABASE = "django_keys"


def query(sql, *arguments):
    """The first column of the first row."""
    with connection.cursor() as cursor:
        cursor.execute(sql, arguments)
        return cursor.fetchone()[0]


def key_default(table):
    return query("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef"
                 " WHERE adrelid = %s::regclass AND adnum = 1", table)


def check_ids(ids, what):
    """Every id is this server's: its machine bits, and a time after the epoch's first year."""
    machine = int(query("SELECT current_setting('snowflake.machine_id')"))
    for key in ids:
        assert isinstance(key, int), f"{what}: the key {key!r} is an int"
        assert (key >> 12) & 31 == machine, f"{what}: {key} carries this server's machine id"
        assert key > 1 << 40, f"{what}: {key} is a Snowflake id, not a sequence's number"


def warnings_since(mark):
    return [notice for notice in connection.connection.notices[mark:] if "WARNING" in notice]


def main():
    make_database(DATABASE)
    settings.configure(
        DATABASES={"default": {
            "ENGINE": "django.db.backends.postgresql", "NAME": DATABASE,
            "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"],
            "USER": os.environ["PGUSER"], "PASSWORD": os.environ.get("PGPASSWORD", "")}},
        INSTALLED_APPS=["shop.apps.ShopConfig", "legacy"],
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        USE_TZ=True)
    django.setup()
    from legacy.models import Ticket
    from shop.models import LineItem, Order

    call_command("migrate", "shop", verbosity=0)
    for table in ("shop_order", "shop_lineitem"):
        assert key_default(table) == "snowflake_nextval()", f"{table} keeps its default"
    sequences = query("SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname LIKE 'shop%%'")
    assert sequences == 0, "no sequence of the app exists"
    orders = [Order.objects.create(name=f"order {n}") for n in range(3)]
    items = [LineItem.objects.create(order=order) for order in orders]
    check_ids([order.pk for order in orders] + [item.pk for item in items], "shop")
    assert [o.pk for o in Order.objects.order_by("pk")] == [o.pk for o in orders], \
        "the keys read back are the keys returned, in the order of their inserts"

    call_command("migrate", "legacy", "0002", verbosity=0)
    mark = len(connection.connection.notices)
    assert key_default("legacy_ticket") == "snowflake_nextval()", "the converted key keeps it"
    assert not warnings_since(0), f"no warning yet: {connection.connection.notices}"
    check_ids([Ticket.objects.create(subject="before").pk], "legacy")

    call_command("migrate", "legacy", "0003", verbosity=0)
    warned = warnings_since(mark)
    named = [notice for notice in warned
             if "legacy_ticket no longer calls snowflake_nextval()" in notice]
    assert named, f"the trap is named: {warned}"
    assert key_default("legacy_ticket").startswith("nextval("), "the sequence replaced it"
    largest = query("SELECT max(id) FROM legacy_ticket")
    assert Ticket.objects.create(subject="trap").pk == largest + 1, \
        "the sequence's keys follow the largest key, as the warning says"
    # The warning's step.
    query("SELECT count(*) FROM snowflake_convert_column('legacy_ticket', 'id')")
    check_ids([Ticket.objects.create(subject="after").pk], "legacy after the warning's step")
    print("django: the recipe's keys kept their default through 6 migrations; "
          "the BigAutoField trap warned")


if __name__ == "__main__":
    main()
