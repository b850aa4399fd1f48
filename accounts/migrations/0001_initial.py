"""Accounts on django-allauth.

- Usernames unique in any case, in the database: a unique index on
  LOWER(username) (auth_user is django.contrib.auth's table, so by hand; SQLite
  and PostgreSQL both have expression indexes). Existing names that differ only
  in case stop the migration with their list: they are not merged.
- Every existing email address becomes an unconfirmed EmailAddress of its
  account: it receives password resets once its owner confirms it.
- Confirmed addresses unique in any case: a unique index on LOWER(email) where
  verified (allauth's own constraint compares the stored, lower-cased text).
- The cache table allauth's limits counted in until 0003 replaced it (with no
  database cache left in settings.CACHES, createcachetable makes none now).
"""

from django.conf import settings
from django.core.management import call_command
from django.db import migrations
from django.db.models import Count
from django.db.models.functions import Lower

USERNAME_INDEX = "accounts_username_unique_ci"
VERIFIED_EMAIL_INDEX = "accounts_verified_email_unique_ci"
CACHE_TABLE = "accounts_rate_limits"


def add_unique_username_index(apps, schema_editor):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    shared = list(
        user_model.objects.values(name=Lower("username"))
        .annotate(accounts=Count("pk"))
        .filter(accounts__gt=1)
        .values_list("name", flat=True)
    )
    if shared:
        names = sorted(
            user_model.objects.annotate(name=Lower("username"))
            .filter(name__in=shared)
            .values_list("username", flat=True)
        )
        raise RuntimeError(
            "Usernames must be unique in any case before this migration; these "
            f"differ only in case: {', '.join(names)}. Rename all but one of "
            "each in the admin, then migrate again."
        )
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE UNIQUE INDEX {quote(USERNAME_INDEX)} "
        f"ON {quote(user_model._meta.db_table)} (LOWER({quote('username')}))"
    )


def drop_index(name):
    def drop(apps, schema_editor):
        schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")

    return drop


def copy_email_addresses(apps, schema_editor):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    email_address = apps.get_model("account", "EmailAddress")
    known = set(email_address.objects.values_list("user_id", flat=True))
    email_address.objects.bulk_create(
        email_address(user_id=pk, email=email.lower(), verified=False, primary=True)
        for pk, email in user_model.objects.exclude(email="").values_list(
            "pk", "email"
        )
        if pk not in known
    )


def add_unique_verified_email_index(apps, schema_editor):
    table = apps.get_model("account", "EmailAddress")._meta.db_table
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE UNIQUE INDEX {quote(VERIFIED_EMAIL_INDEX)} "
        f"ON {quote(table)} (LOWER({quote('email')})) WHERE {quote('verified')}"
    )


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias)


def drop_cache_table(apps, schema_editor):
    schema_editor.execute(
        f"DROP TABLE IF EXISTS {schema_editor.quote_name(CACHE_TABLE)}"
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("account", "0009_emailaddress_unique_primary_email"),
        ("games", "0006_accounts_moved"),
    ]

    operations = [
        migrations.RunPython(add_unique_username_index, drop_index(USERNAME_INDEX)),
        migrations.RunPython(copy_email_addresses, migrations.RunPython.noop),
        migrations.RunPython(
            add_unique_verified_email_index, drop_index(VERIFIED_EMAIL_INDEX)
        ),
        migrations.RunPython(create_cache_table, drop_cache_table),
    ]
