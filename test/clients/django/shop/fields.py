"""The key of the Django recipe in doc/reference.md "ORMs and frameworks"."""
from django.db import models


class SnowflakeAutoField(models.BigAutoField):
    """A key that keeps DEFAULT snowflake_nextval() through every migration.

    To the schema editor it is a plain bigint, so no migration makes it a serial or an identity
    and replaces its default. To the rest of Django it is an AutoField, left out of an INSERT and
    read back with RETURNING.
    """

    def get_internal_type(self):
        return "BigIntegerField"
