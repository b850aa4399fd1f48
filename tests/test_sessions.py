"""Sessions are read from a cache every server process shares (settings.CACHES
["sessions"]): proven against `make serve` with 2 worker processes that logging
out, or changing the password, in one process ends the session in the other at
once.

Each step pins which process answers by stopping the other one (SIGSTOP): the
processes share one listening socket, so a stopped process accepts nothing.
"""

import os
import signal
from contextlib import contextmanager

import pytest

from games import checks

from .conftest import PASSWORD
from .support.served import serving

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
