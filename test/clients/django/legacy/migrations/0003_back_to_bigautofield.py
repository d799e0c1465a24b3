from django.db import migrations, models


class Migration(migrations.Migration):
    """What makemigrations writes once DEFAULT_AUTO_FIELD names BigAutoField: a sequence again."""
    dependencies = [("legacy", "0002_snowflake_key")]
    operations = [
        migrations.AlterField(
            model_name="ticket", name="id",
            field=models.BigAutoField(
                auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
    ]
