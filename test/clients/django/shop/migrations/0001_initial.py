from django.db import migrations, models

import shop.fields


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", shop.fields.SnowflakeAutoField(
                    auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=50)),
            ],
        ),
        # The recipe's one step per table: the key's default.
        migrations.RunSQL(
            "ALTER TABLE shop_order ALTER COLUMN id SET DEFAULT snowflake_nextval()",
            migrations.RunSQL.noop),
    ]
