"""The installable app in Chromium: the manifest every page links parses with no
error, the service worker controls the page after a reload, and with the network
off (context.set_offline) a page load shows the site's offline page in the
viewer's language at the address asked for, which reloads by itself once the
network is back. The offline page passes axe and fits a 390 px phone, light and
dark; its screenshots are committed under .github/screenshots/. The routes'
own tests: tests/tictactoe_site/test_web_app.py."""

import json
import shutil
from pathlib import Path

import pytest
from django.utils import translation
from django.utils.translation import gettext
from playwright.sync_api import Page, expect

from games import services
from tictactoe_site.lib import web_app

from .conftest import BOTH_SCHEMES
from .test_accessibility import BLOCKING, audit

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".github" / "screenshots"
PHONE = {"width": 390, "height": 844}
# Resolves once this page's worker is active, with its registration's scope.
WORKER_READY = "navigator.serviceWorker.ready.then(registration => registration.scope)"
STATIC_CACHES = (
    "caches.keys().then(names => names.filter("
    "name => name.startsWith('tictactoe-static-')))"
)
# The worker checked for a new version, and the new one's state once it is
# active (or after 10 s, whatever it is).
UPDATED = """async () => {
  const registration = await navigator.serviceWorker.getRegistration();
  await registration.update();
  const worker = registration.installing || registration.waiting;
  if (!worker) {
    return "no new worker";
  }
  return new Promise((resolve) => {
    const done = () => worker.state === "activated" && resolve(worker.state);
    worker.addEventListener("statechange", done);
    setTimeout(() => resolve(worker.state), 10000);
    done();
  });
}"""
CONTROLLER = (
    "navigator.serviceWorker.controller && navigator.serviceWorker.controller.scriptURL"
)


def controlled(page: Page, server_url: str) -> None:
    """The worker installed from this page, and the page reloaded under it."""
    assert page.evaluate(WORKER_READY) == f"{server_url}/"
    page.reload()
    assert page.evaluate(CONTROLLER) == f"{server_url}/service-worker.js"


def words(language: str) -> tuple[str, str]:
    """The offline page's heading and button in `language`, from its catalog."""
    with translation.override(language):
        return gettext("You are offline"), gettext("Try again")


def test_the_linked_manifest_parses_without_errors(open_page, server_url, settings):
    # The manifest's URLs start with the site's address: here, the live server's.
    settings.SITE_URL = server_url
    page = open_page()
    page.goto("/accounts/login/")
    session = page.context.new_cdp_session(page)
    manifest = session.send("Page.getAppManifest")
    assert manifest["url"] == f"{server_url}/manifest/en.webmanifest"
    assert manifest["errors"] == []
    data = json.loads(manifest["data"])
    assert data["start_url"] == f"{server_url}/"
    assert data["display"] == "standalone"
    sizes = [icon["sizes"] for icon in data["icons"]]
    assert sizes == ["192x192", "512x512", "512x512"]
    assert manifest["parsed"]["scope"] == f"{server_url}/"


def test_the_worker_controls_the_page_after_a_reload(open_page, server_url):
    page = open_page()
    page.goto("/accounts/login/")
    assert page.evaluate(CONTROLLER) is None  # the first load: not yet
    controlled(page, server_url)
    page.goto("/accounts/signup/")
    assert page.evaluate(CONTROLLER) == f"{server_url}/service-worker.js"


def test_offline_a_game_shows_the_offline_page_which_reloads_when_back_online(
    player, server_url
):
    alice = player("alice")
    bob = player("bob")
    game = services.create_game(creator=alice.user, opponent=bob.user)
    page = alice.page
    alice.open_game(game.pk)
    controlled(page, server_url)
    heading, button = words("en")

    page.context.set_offline(True)
    # Neither the game nor the lobby was kept: both are the offline page.
    for path in (f"/games/{game.pk}/", "/"):
        page.goto(path)
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        assert page.url == f"{server_url}{path}"
        expect(page.get_by_role("button", name=button)).to_be_visible()
    page.goto(f"/games/{game.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    with page.expect_navigation():  # Try again reloads; still offline: offline
        page.get_by_role("button", name=button).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    assert page.url == f"{server_url}/games/{game.pk}/"

    with page.expect_navigation():
        page.context.set_offline(False)  # the page reloads by itself
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Game {game.pk}")
    assert page.url == f"{server_url}/games/{game.pk}/"


def test_the_offline_page_is_in_the_language_the_viewer_last_chose(player, server_url):
    alice = player("alice")
    page = alice.page
    page.goto("/")
    controlled(page, server_url)
    # The language menu, online: the next page is French.
    page.locator("#site-language").select_option("fr")
    with page.expect_navigation():
        page.locator(".language-menu button").click()
    expect(page.locator("html")).to_have_attribute("lang", "fr")

    page.context.set_offline(True)
    page.goto("/games/archive/")
    heading, button = words("fr")
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("button", name=button)).to_be_visible()


@BOTH_SCHEMES
def test_the_offline_page_on_a_phone_is_accessible(
    open_page, server_url, axe_source, color_scheme
):
    page = open_page(viewport=PHONE)
    page.goto("/accounts/login/")
    controlled(page, server_url)
    page.context.set_offline(True)
    page.goto("/accounts/login/")
    expect(page.get_by_role("heading", level=1)).to_have_text(words("en")[0])
    blocking = [v for v in audit(page, axe_source) if v["impact"] in BLOCKING]
    assert blocking == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    retry = page.get_by_role("button", name=words("en")[1]).bounding_box()
    assert retry["height"] >= 24
    assert retry["width"] >= 24
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"offline-{color_scheme}-phone.png")


@pytest.fixture
def release(settings, tmp_path):
    """release(css) -> the site as a new release serves it: its static files
    with `css` added to app.css (the worker is rebuilt from them)."""

    def release_(css: str) -> None:
        copy = tmp_path / "static"
        shutil.copytree(ROOT / "static", copy)
        with (copy / "games" / "app.css").open("a") as file:
            file.write(css)
        settings.STATICFILES_DIRS = [copy]
        web_app.worker.cache_clear()

    yield release_
    web_app.worker.cache_clear()  # the checkout's files again, for later tests


def test_a_release_replaces_the_worker_and_its_cache_whole(
    open_page, server_url, release
):
    page = open_page()
    page.goto("/accounts/login/")
    controlled(page, server_url)
    [old] = page.evaluate(STATIC_CACHES)
    outline = "getComputedStyle(document.body).outlineStyle"
    assert page.evaluate(outline) == "none"

    release("body { outline: 7px dotted; }\n")
    # The browser checks the worker (as after a navigation): a new one installs,
    # takes over and drops the old cache.
    assert page.evaluate(UPDATED) == "activated"
    [new] = page.evaluate(STATIC_CACHES)
    assert new != old
    page.reload()
    # The release's stylesheet, not the one the old worker kept.
    assert page.evaluate(outline) == "dotted"
