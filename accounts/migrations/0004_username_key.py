"""Usernames unique after case folding and Unicode normalisation.

Each user's name folded (NFKC, casefold, NFKC: accounts.usernames.username_key)
is stored in its own row, unique in the database, since neither database folds
Unicode in an index. Existing names that fold to one key, or to a key longer
than a name may be, stop the migration with their list: nothing is merged or
renamed, and nothing is stored.
"""

import unicodedata
from collections import defaultdict

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

KEY_MAX_LENGTH = 150


def username_key(name: str) -> str:
    """accounts.usernames.username_key as this migration knew it."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def store_username_keys(apps, schema_editor):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    key_model = apps.get_model("accounts", "UsernameKey")
    names = defaultdict(list)  # key -> the names with it
    keys = {}
    for pk, name in user_model.objects.values_list("pk", "username"):
        keys[pk] = username_key(name)
        names[keys[pk]].append(name)
    problems = []
    shared = sorted(sorted(group) for group in names.values() if len(group) > 1)
    if shared:
        problems.append(
            "These would be one name: "
            + "; ".join(", ".join(group) for group in shared)
            + ". Rename all but one of each in the admin, then migrate again."
        )
    too_long = sorted(
        name
        for key, group in names.items()
        if len(key) > KEY_MAX_LENGTH
        for name in group
    )
    if too_long:
        problems.append(
            f"These are longer than {KEY_MAX_LENGTH} characters once folded: "
            + ", ".join(too_long)
            + ". Rename them in the admin, then migrate again."
        )
    if problems:
        raise RuntimeError(
            "Usernames must be unique after case folding and Unicode "
            "normalisation before this migration; nothing was changed. "
            + " ".join(problems)
        )
    key_model.objects.bulk_create(
        key_model(user_id=pk, key=key) for pk, key in keys.items()
    )


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0003_rate_limit_counts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="UsernameKey",
            fields=[
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="username_key",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("key", models.CharField(max_length=150)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("key",), name="accounts_username_key_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(store_username_keys, migrations.RunPython.noop),
    ]
