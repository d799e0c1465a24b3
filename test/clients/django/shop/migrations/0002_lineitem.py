from django.db import migrations, models
import django.db.models.deletion

import shop.fields


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [
        migrations.CreateModel(
            name="LineItem",
            fields=[
                ("id", shop.fields.SnowflakeAutoField(
                    auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("order", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, to="shop.order")),
            ],
        ),
        migrations.RunSQL(
            "ALTER TABLE shop_lineitem ALTER COLUMN id SET DEFAULT snowflake_nextval()",
            migrations.RunSQL.noop),
        # Later changes of the table, the key's included, leave the default alone.
        migrations.AlterField(
            model_name="order", name="name", field=models.CharField(max_length=80)),
        migrations.AlterField(
            model_name="order", name="id",
            field=shop.fields.SnowflakeAutoField(
                primary_key=True, serialize=False, verbose_name="key")),
    ]
