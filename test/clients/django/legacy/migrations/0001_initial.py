from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel(
            name="Ticket",
            fields=[
                ("id", models.BigAutoField(
                    auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("subject", models.CharField(max_length=50)),
            ],
        ),
        migrations.RunSQL("SELECT snowflake_convert_column('legacy_ticket', 'id')",
                          migrations.RunSQL.noop),
    ]
