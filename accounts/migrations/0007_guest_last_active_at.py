"""When each guest was last active (accounts.models.Guest.last_active_at), and
the index by which housekeeping finds the idle ones: built concurrently on
PostgreSQL (docs/operations.md, "Migrations on large tables"). Guests made
before it count as active at the migration."""

import django.utils.timezone
from django.db import migrations, models

from tictactoe_site.lib.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0006_guests"),
    ]

    operations = [
        migrations.AddField(
            model_name="guest",
            name="last_active_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        AddIndexConcurrently(
            "guest",
            models.Index(fields=["last_active_at"], name="accounts_guest_last_active"),
        ),
    ]
