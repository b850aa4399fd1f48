"""A session ended anywhere is ended everywhere: proven against `make serve`
with 2 worker processes (one host: on SQLite they share a session cache in
DJANGO_CACHE_DIR), and against two `make serve` hosts on one PostgreSQL database,
each with a cache directory of its own and no REDIS_URL (the database is the
truth: every request reads its session there). Logging out, or changing the
password, on one ends the session on the other at once.

Within one host, each step pins which process answers by stopping the other one
(SIGSTOP): the processes share one listening socket, so a stopped process
accepts nothing.
"""

import json
import os
import signal
from contextlib import contextmanager

import pytest

from games import checks

from ..conftest import PASSWORD
from ..support.served import (
    ServedApp,
    fresh_database,
    manage,
    serving,
)

NEW_PASSWORD = "another-long-password-43"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served_sessions")
    with serving(tmp_dir, "sessions", workers=2) as app:
        yield app


@pytest.fixture
def workers(server) -> list:
    pids = server.worker_pids()
    assert len(pids) == 2
    return pids


@contextmanager
def only(pid: int, workers: list[int]):
    """Every request inside is answered by worker `pid`: the others are stopped."""
    others = [other for other in workers if other != pid]
    for other in others:
        os.kill(other, signal.SIGSTOP)
    try:
        yield
    finally:
        for other in others:
            os.kill(other, signal.SIGCONT)


def sign_up(server, username: str):
    browser = server.browser()
    assert browser.get("/accounts/signup/").status == 200  # the CSRF cookie
    fields = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    assert browser.post("/accounts/signup/", fields).status == 302
    return browser


def log_in(server, username: str, password: str):
    browser = server.browser()
    assert browser.get("/accounts/login/").status == 200
    fields = {"login": username, "password": password}
    assert browser.post("/accounts/login/", fields).status == 302
    return browser


def lobby_status(browser) -> tuple[int, str]:
    response = browser.get("/")
    return response.status, response.headers.get("Location", "")


LOGGED_OUT = (302, "/accounts/login/?next=/")


@pytest.mark.processes
def test_logging_out_in_one_process_ends_the_session_in_the_other(server, workers):
    first, second = workers
    browser = sign_up(server, "dora")
    with only(second, workers):
        assert lobby_status(browser) == (200, "")  # the second process knows it
    copy = server.browser()
    copy.cookies = dict(browser.cookies)  # the same session, kept elsewhere
    with only(first, workers):
        assert browser.post("/accounts/logout/").status == 302
    with only(second, workers):
        assert lobby_status(copy) == LOGGED_OUT
    with only(first, workers):
        assert lobby_status(copy) == LOGGED_OUT


@pytest.mark.processes
def test_a_password_change_in_one_process_ends_the_other_sessions_there(
    server, workers
):
    first, second = workers
    sign_up(server, "erin")
    here, elsewhere = log_in(server, "erin", PASSWORD), log_in(server, "erin", PASSWORD)
    with only(second, workers):
        assert lobby_status(here) == (200, "")
        assert lobby_status(elsewhere) == (200, "")
    with only(first, workers):
        fields = {
            "oldpassword": PASSWORD,
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        }
        assert here.post("/accounts/password/change/", fields).status == 302
    with only(second, workers):
        assert lobby_status(elsewhere) == LOGGED_OUT
        assert lobby_status(here) == (200, "")  # the session that changed it stays


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Two hosts of one fleet: one PostgreSQL database, nothing else shared."""
    tmp_dir = tmp_path_factory.mktemp("served_sessions_hosts")
    with fresh_database(tmp_dir, "sessions_hosts", migrated=True) as database_url:
        apps = [
            ServedApp(database_url=database_url, tmp_dir=tmp_dir, workers=1)
            for _ in range(2)
        ]
        try:
            for app in apps:
                app.start()
            yield apps
        finally:
            for app in apps:
                app.stop()


def on(host, browser):
    """A browser for `host` with a copy of `browser`'s cookies: the same
    session, kept when `browser` logs out and forgets it."""
    copy = host.browser()
    copy.cookies = dict(browser.cookies)
    return copy


# SQLite is one host by construction: there is no second host to ask.
@pytest.mark.postgresql_only
def test_logging_out_on_one_host_ends_the_session_on_the_other(hosts):
    host_a, host_b = hosts
    browser = sign_up(host_a, "fay")
    kept = on(host_b, browser)  # the same session, sent to host B
    assert lobby_status(kept) == (200, "")  # host B knows it
    assert browser.post("/accounts/logout/").status == 302
    assert lobby_status(kept) == LOGGED_OUT
    assert lobby_status(on(host_a, kept)) == LOGGED_OUT


@pytest.mark.postgresql_only
def test_a_password_change_on_one_host_ends_the_other_sessions_on_the_other(hosts):
    host_a, host_b = hosts
    sign_up(host_a, "gil")
    here, elsewhere = log_in(host_a, "gil", PASSWORD), log_in(host_a, "gil", PASSWORD)
    elsewhere = on(host_b, elsewhere)
    assert lobby_status(on(host_b, here)) == (200, "")
    assert lobby_status(elsewhere) == (200, "")
    fields = {
        "oldpassword": PASSWORD,
        "password1": NEW_PASSWORD,
        "password2": NEW_PASSWORD,
    }
    assert here.post("/accounts/password/change/", fields).status == 302
    assert lobby_status(elsewhere) == LOGGED_OUT
    assert lobby_status(on(host_b, here)) == (200, "")  # the one that changed it


def test_a_session_cache_directory_the_server_cannot_write_is_a_system_error(
    settings, tmp_path
):
    """`make serve` migrates before it serves, and migrate runs the checks."""
    taken = tmp_path / "a-file"
    taken.write_text("")
    settings.CACHES = settings.CACHES | {
        "sessions": {"BACKEND": checks.FILE_CACHE, "LOCATION": str(taken)}
    }
    errors = checks.session_cache_is_writable(None)
    assert [(error.id, error.msg) for error in errors] == [
        (
            "games.E001",
            f"The session cache directory {taken} cannot be written (File exists).",
        )
    ]
    writable = tmp_path / "sessions"
    settings.CACHES = settings.CACHES | {
        "sessions": {"BACKEND": checks.FILE_CACHE, "LOCATION": str(writable)}
    }
    assert checks.session_cache_is_writable(None) == []
    assert writable.is_dir()


SHOW_SESSIONS = (
    "import json; from django.conf import settings; print(json.dumps({"
    "'engine': settings.SESSION_ENGINE, "
    "'cache': settings.CACHES.get('sessions', {}).get('LOCATION')}, default=str))"
)


def sessions_of(**env: str) -> dict:
    """Where production settings read sessions from, given `env`."""
    base = {
        "DJANGO_SETTINGS_MODULE": "tictactoe_site.settings",
        "DJANGO_SECRET_KEY": "sessions-test-secret",
        "DJANGO_SITE_URL": "https://ttt.example.com",
        "DJANGO_CACHE_DIR": "/var/cache/tictactoe",
    }
    result = manage("shell", "-v", "0", "-c", SHOW_SESSIONS, env=base | env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


SQLITE = {"DATABASE_URL": "sqlite:////tmp/ttt-sessions-test.sqlite3"}
POSTGRESQL = {"DATABASE_URL": "postgres://app@db.internal:5432/ttt"}
REDIS = {"REDIS_URL": "redis://cache.internal:6379/0"}


@pytest.mark.parametrize("env", [SQLITE, SQLITE | REDIS], ids=["alone", "redis"])
@pytest.mark.processes
def test_with_sqlite_sessions_are_cached_in_the_private_directory(env):
    assert sessions_of(**env) == {
        "engine": "accounts.session_engines.cached_db",
        "cache": "/var/cache/tictactoe/sessions",
    }


@pytest.mark.parametrize(
    "env", [POSTGRESQL, POSTGRESQL | REDIS], ids=["alone", "redis"]
)
@pytest.mark.processes
def test_with_postgresql_every_request_reads_its_session_from_the_database(env):
    assert sessions_of(**env) == {
        "engine": "accounts.session_engines.db",
        "cache": None,
    }
