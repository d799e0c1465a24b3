"""The recipe's app: its models' keys are SnowflakeAutoField unless a model says otherwise.

Set per app, not in DEFAULT_AUTO_FIELD: Django's own table of migrations takes that setting's
field too, and its inserts would find no default.
"""
from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "shop"
    default_auto_field = "shop.fields.SnowflakeAutoField"
