"""The recipe's models: their keys come from the app's default_auto_field (shop/apps.py)."""
from django.db import models


class Order(models.Model):
    name = models.CharField(max_length=80)


class LineItem(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
