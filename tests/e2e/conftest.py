"""Browser fixtures: one headless browser per test process, a fresh browser
context (its own cookie jar) for every person in a test, the real app served by
pytest-django's `live_server`.

The browser is Chromium's headless shell (the build Playwright itself runs
headless): over tests/e2e it costs about 30 % less CPU than headless Chromium.
It has no notification permission, so tests marked `notifications` get Chromium.

Without a browser the browser tests skip and say how to enable them; with
E2E_REQUIRED=1 (set by .ci/run) they fail instead, so CI can never pass by
quietly skipping them.
"""

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import connection
from django.test import Client
from playwright.sync_api import Browser, Page, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from tests.conftest import PASSWORD
from tests.e2e.pages import LIVE_MS, RECORDER, Player

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
AXE_SCRIPT = ROOT / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
HEADLESS_SHELL = os.environ.get(
    "E2E_HEADLESS_SHELL", "/usr/bin/chromium-headless-shell"
)
# What to install for each: Debian's package names.
PACKAGES = {CHROMIUM: "chromium", HEADLESS_SHELL: "chromium-headless-shell"}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Bounded waits: every expect()/click waits for its condition at most this long.
TIMEOUT_MS = 10_000


def e2e_required() -> bool:
    return os.environ.get("E2E_REQUIRED", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str, how_to_enable: str):
    """Skip on a developer's machine; fail where the browser tests are required."""
    if e2e_required():
        pytest.fail(f"{reason} (E2E_REQUIRED is set, so this fails)", pytrace=False)
    pytest.skip(f"{reason}. {how_to_enable}")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "notifications: grants the notification permission, which Chromium's "
        "headless shell lacks: the test runs in Chromium",
    )


def launch(playwright: Playwright, executable: str) -> Browser:
    """`executable` started headless, or the test skipped (failed under
    E2E_REQUIRED) with how to install it."""
    if shutil.which(executable) is None:
        unavailable(
            f"browser tests need {executable}",
            f"To run them: apt-get install {PACKAGES.get(executable, executable)} "
            "(Debian/Ubuntu), or set E2E_CHROMIUM and E2E_HEADLESS_SHELL to the "
            "browsers' paths",
        )
    try:
        return playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
    except PlaywrightError as exc:
        unavailable(
            f"{executable} did not start: {exc.message.splitlines()[0]}",
            f"Check that it runs: {executable} --headless --no-sandbox --version",
        )


@pytest.fixture(scope="package")
def browsers() -> Iterator[Callable[[str], Browser]]:
    """browsers(executable) -> that browser, launched the first time a test of
    this package asks for it and closed when they are done: Playwright's event
    loop must not outlive them (tests elsewhere run their own with
    asyncio.run)."""
    # Playwright's sync API runs an event loop in this thread, and Django then
    # refuses ORM calls from it (SynchronousOnlyOperation). The tests never
    # await anything, so allow them while the browsers are up.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        launched: dict[str, Browser] = {}

        def get(executable: str) -> Browser:
            if executable not in launched:
                launched[executable] = launch(playwright, executable)
            return launched[executable]

        yield get
        for browser in launched.values():
            browser.close()


@pytest.fixture
def browser(request, browsers) -> Browser:
    """The headless shell, or Chromium for a test marked `notifications`."""
    wanted = request.node.get_closest_marker("notifications")
    return browsers(CHROMIUM if wanted else HEADLESS_SHELL)


@pytest.fixture
def server_url(live_server) -> str:
    return live_server.url


@pytest.fixture
def color_scheme() -> str:
    """The system setting (prefers-color-scheme) every browser context of a test
    emulates. A test runs in both by parametrizing it: BOTH_SCHEMES."""
    return "light"


BOTH_SCHEMES = pytest.mark.parametrize("color_scheme", ["light", "dark"])


@pytest.fixture
def open_page(browser: Browser, server_url: str, color_scheme: str) -> Iterator:
    """open_page(**context_options) -> a Page in a new browser context (its own
    cookie jar, the test's color_scheme) whose relative URLs go to the live
    server."""
    contexts = []

    def open_(**options) -> Page:
        options.setdefault("color_scheme", color_scheme)
        context = browser.new_context(base_url=server_url, **options)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture
def player(open_page, server_url, django_user_model):
    """player(username) -> a Player in a browser context of its own, with an
    account and logged in (a session cookie from Django's test client; the forms
    have tests of their own). account=False: the test signs up through the form;
    logged_in=False: the test logs in through the form."""

    def make(
        username: str, *, account: bool = True, logged_in: bool = True, **options
    ) -> Player:
        page = open_page(**options)
        user = None
        if account:
            user = django_user_model.objects.create_user(
                username=username, password=PASSWORD
            )
            if logged_in:
                client = Client()
                client.force_login(user)
                cookie = client.cookies[settings.SESSION_COOKIE_NAME]
                page.context.add_cookies(
                    [{"name": cookie.key, "value": cookie.value, "url": server_url}]
                )
        return Player(page, username, PASSWORD, user)

    return make


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def axe_source() -> str:
    if not AXE_SCRIPT.is_file():
        unavailable(
            f"the accessibility audit needs axe-core at {AXE_SCRIPT.relative_to(ROOT)}",
            "To run it: install Node.js with npm, then make test (it runs npm ci)",
        )
    return AXE_SCRIPT.read_text()


@pytest.fixture(autouse=True)
def fresh_login_limits(transactional_db):
    """Every test starts with no counted logins or reset requests (every
    browser comes from 127.0.0.1): they live in their own table, the "default"
    cache (accounts.rate_limits)."""
    cache.clear()


# The live server answers each request in a thread of its own, every thread on
# the test's one in-memory SQLite connection, which must never run two queries at
# once (Django's documentation, LiveServerTestCase): a page's background POST
# (its time zone, static/games/timezone.js) beside the next page's load failed
# with "bad parameter or other API misuse". A request holds this lock from its
# start to its end; the test's own queries take it too.
DATABASE_TURN = threading.RLock()
KEPT_TOO_LONG = "a live-server request kept the database for too long"


@pytest.fixture(autouse=True)
def live_server_requests(transactional_db):
    """The live server's requests one at a time (DATABASE_TURN), and every one
    finished when the test ends: a browser context closed mid-request leaves
    that request running in a server thread, and the test database must be
    emptied after it, not under it (SQLite: "database table is locked"). A
    request counts as running from its start, while it still waits its turn."""
    running = [0]
    changed = threading.Condition()
    held = threading.local()

    def take() -> bool:
        return DATABASE_TURN.acquire(timeout=TIMEOUT_MS / 1000)

    def started(**kwargs):
        with changed:
            running[0] += 1
        held.turn = take()
        assert held.turn, KEPT_TOO_LONG

    def finished(**kwargs):
        if getattr(held, "turn", False):
            held.turn = False
            DATABASE_TURN.release()
        with changed:
            running[0] -= 1
            changed.notify_all()

    def in_turn(execute, sql, params, many, context):
        assert take(), KEPT_TOO_LONG
        try:
            return execute(sql, params, many, context)
        finally:
            DATABASE_TURN.release()

    request_started.connect(started, dispatch_uid="e2e_started")
    request_finished.connect(finished, dispatch_uid="e2e_finished")
    try:
        with connection.execute_wrapper(in_turn):
            yield
        with changed:
            assert changed.wait_for(lambda: running[0] <= 0, TIMEOUT_MS / 1000), (
                f"{running[0]} request(s) still running on the live server"
            )
    finally:
        request_started.disconnect(dispatch_uid="e2e_started")
        request_finished.disconnect(dispatch_uid="e2e_finished")


@pytest.fixture
def people(browser, served):
    """people(*names, notifications=True, locale=None) -> a Player for each name
    (a new account, logged in, no language saved), each in a browser context of
    its own that records notifications; `notifications`: the browser allows
    them; `locale`: the browser's language (its Accept-Language). `served` is
    the real server of the module that asks (it defines that fixture)."""
    base_url = f"http://127.0.0.1:{served.port}"
    contexts = []

    def make(
        *names: str, notifications: bool = True, locale: str | None = None
    ) -> list[Player]:
        keys = served.sessions_for(list(names))
        made = []
        for name in names:
            context = browser.new_context(base_url=base_url, locale=locale)
            context.set_default_timeout(LIVE_MS)
            if notifications:
                context.grant_permissions(["notifications"])
            context.add_init_script(RECORDER)
            context.add_cookies(
                [{"name": "sessionid", "value": keys[name], "url": base_url}]
            )
            contexts.append(context)
            made.append(Player(context.new_page(), name, "", None))
        return made

    yield make
    for context in contexts:
        context.close()
