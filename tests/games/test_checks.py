"""The system checks of what the settings leave to the machine (games.checks):
the shared cache directory must be private (with SQLite, sessions are cached
there as pickles: whoever can write there runs code in the server), the
live-update sockets must fit a Unix socket's path, and a Redis on another host
(it carries the live notices) needs a password and TLS. They run before
`migrate`, so `make serve` stops with the reason.

The tests run as root: "owned by someone else" is a directory given to uid 65534.
"""

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from games import checks

from ..support import hosts, served
from ..support.asgi import BOUND

NOBODY = 65534


@pytest.fixture
def cache_dir(settings, tmp_path) -> Path:
    """DJANGO_CACHE_DIR as the settings make it, the session cache inside."""
    settings.CACHE_DIR = tmp_path / "cache"
    settings.CACHES = settings.CACHES | {
        "sessions": {
            "BACKEND": checks.FILE_CACHE,
            "LOCATION": str(settings.CACHE_DIR / "sessions"),
        }
    }
    return settings.CACHE_DIR


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_cache_directory_and_every_parent_it_needs_are_created_private(
    settings, tmp_path
):
    settings.CACHE_DIR = tmp_path / "a" / "b" / "cache"
    sessions = settings.CACHE_DIR / "sessions"
    settings.CACHES = settings.CACHES | {
        "sessions": {"BACKEND": checks.FILE_CACHE, "LOCATION": str(sessions)}
    }
    old = os.umask(0o002)  # a lax umask: new directories group-writable
    try:
        assert checks.session_cache_is_writable(None) == []
    finally:
        os.umask(old)
    created = [tmp_path / "a", tmp_path / "a" / "b", settings.CACHE_DIR, sessions]
    assert [mode(path) for path in created] == [0o700] * 4


@pytest.mark.parametrize("lax", [0o770, 0o707, 0o777, 0o720, 0o702], ids=oct)
def test_a_cache_directory_others_may_write_stops_the_start(cache_dir, lax):
    cache_dir.mkdir(mode=0o700)
    cache_dir.chmod(lax)
    errors = checks.session_cache_is_writable(None)
    assert [(error.id, error.msg) for error in errors] == [
        (
            "games.E002",
            f"The session cache directory is not private: {cache_dir} is "
            f"writable by other users (mode {lax:04o}).",
        )
    ]
    assert "chmod go-w" in errors[0].hint


def test_a_session_directory_others_may_write_stops_the_start(cache_dir):
    sessions = cache_dir / "sessions"
    sessions.mkdir(parents=True)
    sessions.chmod(0o775)
    cache_dir.chmod(0o700)
    errors = checks.session_cache_is_writable(None)
    assert [(error.id, error.msg) for error in errors] == [
        (
            "games.E002",
            f"The session cache directory is not private: {sessions} is "
            "writable by other users (mode 0775).",
        )
    ]


def test_a_cache_directory_owned_by_another_user_stops_the_start(cache_dir):
    cache_dir.mkdir(mode=0o700)
    os.chown(cache_dir, NOBODY, NOBODY)
    errors = checks.session_cache_is_writable(None)
    assert [(error.id, error.msg) for error in errors] == [
        (
            "games.E002",
            f"The session cache directory is not private: {cache_dir} is owned "
            f"by uid {NOBODY}, not by the server's user (uid {os.geteuid()}).",
        )
    ]


def test_a_private_cache_directory_passes(cache_dir):
    cache_dir.mkdir(mode=0o755)  # others may read (not write): allowed
    assert checks.session_cache_is_writable(None) == []


def test_without_a_session_cache_there_is_no_directory_to_check(settings, tmp_path):
    """PostgreSQL: every session is read from the database."""
    settings.CACHE_DIR = tmp_path / "cache"
    settings.CACHES = {
        alias: cache for alias, cache in settings.CACHES.items() if alias != "sessions"
    }
    assert checks.session_cache_is_writable(None) == []
    assert not settings.CACHE_DIR.exists()


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`manage.py` in a fresh process with production settings and `env`."""
    return served.manage(
        *args,
        env={
            "DJANGO_SETTINGS_MODULE": "tictactoe_site.settings",
            "DJANGO_SECRET_KEY": "checks-test-secret",
            "DJANGO_DEBUG": "0",
            "DJANGO_SITE_URL": "https://ttt.example.com",
            **env,
        },
    )


@pytest.mark.processes
def test_migrate_refuses_a_cache_directory_others_may_write(tmp_path):
    """As `make serve` runs it, before serving."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    result = manage(
        "migrate",
        "--noinput",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_CACHE_DIR=str(cache),
    )
    assert result.returncode == 1
    assert (
        f"games.E002) The session cache directory is not private: {cache} is "
        "writable by other users (mode 0777)."
    ) in result.stderr
    assert "Operations to perform" not in result.stdout


@pytest.mark.processes
def test_a_live_socket_directory_others_may_write_stops_the_start(tmp_path):
    cache = tmp_path / "cache"
    (cache / "live").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "live").chmod(0o733)
    result = manage(
        "check",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_CACHE_DIR=str(cache),
    )
    assert result.returncode == 1
    assert (
        f"games.E002) The live-update socket directory is not private: "
        f"{cache / 'live'} is writable by other users (mode 0733)."
    ) in result.stderr


@pytest.mark.processes
def test_a_cache_directory_too_long_for_the_live_sockets_stops_the_start(tmp_path):
    """A Unix socket's path holds at most 107 bytes (and its NUL): the sockets
    go to DJANGO_CACHE_DIR/live/<8 hex digits>/<8 hex digits>.sock."""
    cache = tmp_path / "c"
    cache = cache.with_name("c" * (80 - len(str(cache.parent)) - 1))
    assert len(str(cache)) == 80  # 80 + 28: one byte too many
    result = manage(
        "check",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_CACHE_DIR=str(cache),
    )
    assert result.returncode == 1
    assert "games.E003) The live-update sockets in " in result.stderr
    assert (
        "would have paths of up to 108 bytes; a Unix socket's path holds at most 107."
    ) in result.stderr
    assert (
        f"HINT: Set DJANGO_CACHE_DIR to a path of at most 79 bytes ({cache} has 80)."
    ) in result.stderr
    shorter = cache.with_name(cache.name[:-1])
    result = manage(
        "check",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_CACHE_DIR=str(shorter),
    )
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.processes
def test_the_live_sockets_are_in_the_private_cache_directory(tmp_path):
    cache = tmp_path / "cache"
    backend = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'live.sqlite3'}",
        "DJANGO_CACHE_DIR": str(cache),
    }
    with hosts.serving(backend, 1, WEB_CONCURRENCY="2"):
        deadline = time.monotonic() + BOUND
        while len(sockets := list(cache.glob("live/*/*.sock"))) < 2:
            assert time.monotonic() < deadline, "one socket per server process"
            time.sleep(0.05)  # polling for the workers' sockets, bounded
        assert len({path.parent for path in sockets}) == 1
        directories = [cache, cache / "live", sockets[0].parent]
        assert [mode(path) for path in directories] == [0o700] * 3


@pytest.mark.parametrize(
    ("url", "warnings"),
    [
        ("redis://cache.internal:6379/0", ["games.W001", "games.W002"]),
        ("redis://:a-password@cache.internal:6379/0", ["games.W002"]),
        ("rediss://cache.internal:6379/0", ["games.W001"]),
        ("rediss://:a-password@cache.internal:6379/0", []),
        ("rediss://user:a-password@10.0.0.5:6379/0", []),
        ("redis://127.0.0.1:6379/0", []),
        ("redis://127.0.0.2:6379/0", []),
        ("redis://localhost:6379/0", []),
        ("redis://[::1]:6379/0", []),
        ("unix:///run/redis/redis.sock?db=0", []),
        ("redis://localhost.evil.example:6379/0", ["games.W001", "games.W002"]),
    ],
)
def test_a_redis_on_another_host_without_password_or_tls_warns(settings, url, warnings):
    settings.REDIS_URL = url
    found = checks.redis_is_protected_off_this_host(None)
    assert [warning.id for warning in found] == warnings


def test_the_redis_warnings_say_what_is_at_stake_and_the_url_to_use(settings):
    settings.REDIS_URL = "redis://cache.internal:6379/0"
    no_password, no_tls = checks.redis_is_protected_off_this_host(None)
    assert no_password.msg == (
        "REDIS_URL names another host (cache.internal) without a password: "
        "whoever reaches it can read the live notices (which games changed, who "
        "logged out) and flood every server process with false ones."
    )
    assert no_tls.msg == (
        "REDIS_URL names another host (cache.internal) without TLS (redis://, "
        "not rediss://): live notices cross the network in clear."
    )
    assert "REDIS_URL=rediss://:password@host:6379/0" in no_password.hint


@pytest.mark.processes
def test_migrate_shows_the_redis_warning_and_goes_on(tmp_path):
    """`make serve` prints it before serving; a warning does not stop it."""
    result = manage(
        "migrate",
        "--noinput",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        REDIS_URL="redis://cache.internal:6379/0",
    )
    assert result.returncode == 0, result.stderr
    assert (
        "?: (games.W001) REDIS_URL names another host (cache.internal) without a "
        "password"
    ) in result.stderr
    assert "Operations to perform" in result.stdout
