"""DATABASE_URL and the pool variables become the DATABASES Django runs with."""

import json
import os
import subprocess
import sys

from .served import ROOT

SHOW = (
    "import json; from django.conf import settings; d = settings.DATABASES['default'];"
    "keys = ('ENGINE', 'NAME', 'CONN_MAX_AGE', 'OPTIONS');"
    "print(json.dumps({key: d[key] for key in keys}))"
)


def database_settings(**env: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {SHOW}"],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tictactoe_site.settings",
            "DJANGO_SECRET_KEY": "settings-test-secret",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_sqlite_is_the_default_with_wal_and_immediate_transactions():
    database = database_settings()
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == str(ROOT / "db.sqlite3")
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]


def test_postgresql_gets_a_bounded_pool_and_keeps_url_options():
    database = database_settings(
        DATABASE_URL="postgres://app:secret@db.internal:5432/ttt?sslmode=require",
        DJANGO_DB_POOL_MAX="8",
        DJANGO_CONN_MAX_AGE="60",  # ignored: Django's pool requires 0
    )
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert database["NAME"] == "ttt"
    assert database["CONN_MAX_AGE"] == 0
    assert database["OPTIONS"] == {
        "sslmode": "require",
        "connect_timeout": 5,
        "pool": {"min_size": 1, "max_size": 8, "timeout": 3.0},
    }


def test_without_the_pool_postgresql_keeps_persistent_connections():
    database = database_settings(
        DATABASE_URL="postgres://app@db.internal/ttt",
        DJANGO_DB_POOL="0",
        DJANGO_CONN_MAX_AGE="60",
    )
    assert database["CONN_MAX_AGE"] == 60
    assert database["OPTIONS"] == {"connect_timeout": 5}
