"""The limits count in a table of their own (accounts.rate_limits), not in
Django's cache table: the old table and its counts go (a count restarts)."""

from django.db import migrations, models

OLD_CACHE_TABLE = "accounts_rate_limits"


def drop_old_cache_table(apps, schema_editor):
    quote = schema_editor.quote_name
    schema_editor.execute(f"DROP TABLE IF EXISTS {quote(OLD_CACHE_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_turn_email_preference"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateLimitCount",
            fields=[
                ("key", models.TextField(primary_key=True, serialize=False)),
                ("value", models.JSONField(null=True)),
                ("expires_at", models.DateTimeField(db_index=True)),
            ],
        ),
        # Going back, 0001 drops the table only if it exists.
        migrations.RunPython(drop_old_cache_table, migrations.RunPython.noop),
    ]
