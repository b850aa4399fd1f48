"""Accounts: the password-reset throttle's table, and email addresses unique
case-insensitively (blank allowed any number of times) in the database itself, so
that two sign-ups racing for one address cannot both succeed.

The user table belongs to django.contrib.auth, so the index is created here by
hand: a unique index on LOWER(email) where email is not blank (SQLite and
PostgreSQL both support expression and partial indexes)."""

from django.conf import settings
from django.db import migrations, models
from django.db.models import Count
from django.db.models.functions import Lower

EMAIL_INDEX = "games_user_email_unique_ci"


def add_unique_email_index(apps, schema_editor):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    shared = list(
        user_model.objects.exclude(email="")
        .values(address=Lower("email"))
        .annotate(accounts=Count("pk"))
        .filter(accounts__gt=1)
        .values_list("address", flat=True)
    )
    if shared:
        names = sorted(
            user_model.objects.annotate(address=Lower("email"))
            .filter(address__in=shared)
            .values_list("username", flat=True)
        )
        raise RuntimeError(
            "Email addresses must be unique (case-insensitively) before this "
            f"migration: these accounts share one: {', '.join(names)}. Give them "
            "distinct addresses (or none) in the admin, then migrate again."
        )
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE UNIQUE INDEX {quote(EMAIL_INDEX)} "
        f"ON {quote(user_model._meta.db_table)} (LOWER({quote('email')})) "
        f"WHERE {quote('email')} <> ''"
    )


def drop_unique_email_index(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(EMAIL_INDEX)}")


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0004_game_aborted"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="PasswordResetRequest",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("client_ip", models.GenericIPAddressField(blank=True, null=True)),
                ("address_key", models.CharField(max_length=64)),
                ("requested_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["client_ip", "requested_at"], name="reset_by_ip"
                    ),
                    models.Index(
                        fields=["address_key", "requested_at"],
                        name="reset_by_address",
                    ),
                    models.Index(fields=["requested_at"], name="reset_requested_at"),
                ],
            },
        ),
        migrations.RunPython(add_unique_email_index, drop_unique_email_index),
    ]
