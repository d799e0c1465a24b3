from django.db import migrations

import shop.fields


class Migration(migrations.Migration):
    """Moving a converted key to the recipe's field."""
    dependencies = [("legacy", "0001_initial")]
    operations = [
        migrations.AlterField(
            model_name="ticket", name="id",
            field=shop.fields.SnowflakeAutoField(
                primary_key=True, serialize=False, verbose_name="ID")),
    ]
