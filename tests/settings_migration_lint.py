"""Settings for `make lint`'s migration check (tests/support/migration_lint.py):
django-migration-linter, a dev dependency that production hosts never load,
reads the SQL each migration of our apps would run on PostgreSQL, the fleet's
engine, and refuses what breaks hosts still on the previous release
(docs/operations.md, "Releases"). It only connects: to the `postgres` database
of the server at TEST_POSTGRES_URL, where it writes nothing. (On SQLite, Django
rebuilds the table to add a column with a database default, so the linter
there refuses the very step the rule asks for.)"""

import os

import dj_database_url

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "django_migration_linter"]  # noqa: F405
DATABASES = {
    "default": dj_database_url.parse(os.environ["TEST_POSTGRES_URL"])
    | {"NAME": "postgres"}
}

MIGRATION_LINTER_OPTIONS = {
    "include_apps": ["accounts", "games"],
    # Released before the rule (4 December 2026): accepted as they are. A
    # deliberate contract step is added here by name (docs/operations.md).
    "ignore_name": [
        "0001_initial",  # accounts and games
        "0002_turn_email_preference",
        "0003_rate_limit_counts",
        "0004_username_key",
        "0005_record_signed_in_sessions",
        "0006_guests",
        "0007_guest_last_active_at",
        "0008_preferences",
        "0002_player_results",
        "0003_game_rematch_of_index",
        "0004_game_aborted",
        "0005_accounts",
        "0006_accounts_moved",
        "0007_invitations_blocks",
        "0008_drop_rematch_join_index",
        "0009_site_identity",
        "0010_task_table_indexes",
        "0011_verbose_names",
    ],
    "quiet": ["ignore"],  # the accepted and other apps' migrations, unlisted
    "no_cache": True,  # a few seconds' work: no cache under the home directory
}
