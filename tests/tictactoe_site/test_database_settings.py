"""DATABASE_URL and the pool variables become the DATABASES Django runs with;
REDIS_URL and DJANGO_CACHE_DIR the cache sessions are read from."""

import json
import os
import subprocess
import sys

import pytest

from ..support.served import NO_DOT_ENV, ROOT

pytestmark = pytest.mark.processes

DATABASE = (
    "d = settings.DATABASES['default'];"
    "keys = ('ENGINE', 'NAME', 'CONN_MAX_AGE', 'OPTIONS');"
    "print(json.dumps({key: d[key] for key in keys}))"
)
SESSIONS = (
    "print(json.dumps({'engine': settings.SESSION_ENGINE,"
    "'cache': settings.CACHES[settings.SESSION_CACHE_ALIAS]}, default=str))"
)


def database_settings(**env: str) -> dict:
    return settings_of(DATABASE, **env)


def settings_of(show: str, **env: str) -> dict:
    """What `show` prints of the settings a fresh process gets from `env`."""
    script = (
        f"import json, django; django.setup(); from django.conf import settings; {show}"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            **NO_DOT_ENV,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tictactoe_site.settings",
            "DJANGO_SECRET_KEY": "settings-test-secret",
            "DJANGO_SITE_URL": "https://ttt.example.com",
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
    assert database["CONN_MAX_AGE"] == 60  # a process keeps its connection
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
        "pool": {
            "min_size": 1,
            "max_size": 8,
            "timeout": 3.0,
            "reconnect_timeout": 1.0,
        },
    }


def test_without_the_pool_postgresql_keeps_persistent_connections():
    database = database_settings(
        DATABASE_URL="postgres://app@db.internal/ttt",
        DJANGO_DB_POOL="0",
        DJANGO_CONN_MAX_AGE="60",
    )
    assert database["CONN_MAX_AGE"] == 60
    assert database["OPTIONS"] == {"connect_timeout": 5}


def test_sessions_are_read_from_files_every_process_shares():
    sessions = settings_of(SESSIONS)
    assert sessions["engine"] == "accounts.session_engines.cached_db"
    assert sessions["cache"]["BACKEND"] == (
        "django.core.cache.backends.filebased.FileBasedCache"
    )
    assert sessions["cache"]["LOCATION"] == str(ROOT / ".cache" / "sessions")
    moved = settings_of(SESSIONS, DJANGO_CACHE_DIR="/var/cache/tictactoe")
    assert moved["cache"]["LOCATION"] == "/var/cache/tictactoe/sessions"
