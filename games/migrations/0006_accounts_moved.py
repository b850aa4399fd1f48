"""Accounts moved to the accounts app (django-allauth): the password-reset
throttle's table goes (allauth's limits count in the cache table, accounts
migration 0001), and so does the unique index on LOWER(auth_user.email): an
address is now unique among confirmed addresses (allauth's EmailAddress), and
two accounts may hold one unconfirmed address."""

from django.db import migrations

EMAIL_INDEX = "games_user_email_unique_ci"


def drop_unique_email_index(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(EMAIL_INDEX)}")


def add_unique_email_index(apps, schema_editor):
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE UNIQUE INDEX {quote(EMAIL_INDEX)} "
        f"ON {quote('auth_user')} (LOWER({quote('email')})) "
        f"WHERE {quote('email')} <> ''"
    )


class Migration(migrations.Migration):
    dependencies = [("games", "0005_accounts")]

    operations = [
        migrations.DeleteModel(name="PasswordResetRequest"),
        migrations.RunPython(drop_unique_email_index, add_unique_email_index),
    ]
