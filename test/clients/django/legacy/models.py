"""A table made with the recipe of 1.11 and earlier: a BigAutoField converted by RunSQL."""
from django.db import models

import shop.fields


class Ticket(models.Model):
    id = shop.fields.SnowflakeAutoField(primary_key=True, serialize=False, verbose_name="ID")
    subject = models.CharField(max_length=50)
