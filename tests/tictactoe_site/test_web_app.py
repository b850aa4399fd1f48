"""The installable app (tictactoe_site/lib/web_app.py): every page links its
language's manifest, the manifest's fields and absolute URLs, the service
worker's headers, scope and precache (the current hashed static URLs and the
offline pages, never a page), its version following the static files, and the
offline page in every language. In a browser: tests/e2e/test_offline.py."""

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from PIL import Image

from tictactoe_site.lib import web_app

from ..support.readme import routes_table
from ..support.served import collected_static

ROOT = Path(__file__).resolve().parents[2]
GAMES_STATIC = ROOT / "static" / "games"
LANGUAGES = ["en", "fr", "de", "es", "pt-br", "ar"]
# What pages load, and so what the worker keeps.
KEPT = {".css", ".js", ".svg", ".png", ".ico", ".woff2"}


def own_static_files() -> list[str]:
    """The names under static/games/ the worker keeps (its own source aside)."""
    return sorted(
        path.relative_to(GAMES_STATIC).as_posix()
        for path in GAMES_STATIC.rglob("*")
        if path.is_file() and path.suffix in KEPT and path.name != "service_worker.js"
    )


SITE = "http://testserver"  # DJANGO_SITE_URL in tests/settings.py


@pytest.fixture(autouse=True)
def built_anew():
    """The worker and the offline pages are built once per process: each test
    builds them from its own settings."""
    web_app.worker.cache_clear()
    web_app.offline_html.cache_clear()
    yield
    web_app.worker.cache_clear()
    web_app.offline_html.cache_clear()


def worker_site(body: str) -> dict:
    """The `SITE` the worker's body starts with."""
    match = re.match(r"const SITE = (\{.*?\n\});\n", body, re.S)
    assert match, body[:200]
    return json.loads(match[1])


# -- every page links the app --------------------------------------------------


@pytest.mark.parametrize("language", ["fr", "ar"])
def test_every_page_links_the_manifest_of_its_language_and_the_worker(
    client, client_for, alice, language
):
    client.cookies["django_language"] = language
    signed_in = client_for(alice)
    signed_in.cookies["django_language"] = language
    for page in (
        client.get("/accounts/login/"),
        client.get("/games/9999/"),
        signed_in.get("/"),
        signed_in.get("/games/9999/"),
    ):
        assert page.status_code in (200, 302, 404)
        html = page.text if page.status_code != 302 else client.get(page.url).text
        assert f'<link rel="manifest" href="/manifest/{language}.webmanifest">' in html
        assert (
            '<meta name="theme-color" media="(prefers-color-scheme: light)" '
            'content="#ffffff">' in html
        )
        assert (
            '<meta name="theme-color" media="(prefers-color-scheme: dark)" '
            'content="#15181c">' in html
        )
        assert (
            '<script src="/static/games/register_worker.js" '
            'data-url="/service-worker.js" defer></script>' in html
        )


# -- the manifest --------------------------------------------------------------


def test_the_manifest_names_the_app_with_absolute_urls(client):
    answer = client.get("/manifest/en.webmanifest")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/manifest+json"
    assert answer["Cache-Control"] == "no-cache"
    manifest = json.loads(answer.content)
    assert manifest == {
        "id": "/",
        "name": "tictactoe: play tic-tac-toe with friends",
        "short_name": "tictactoe",
        "description": "Play tic-tac-toe with friends, live, in your browser.",
        "lang": "en",
        "dir": "ltr",
        "start_url": f"{SITE}/",
        "scope": f"{SITE}/",
        "display": "standalone",
        "theme_color": "#ffffff",
        "background_color": "#ffffff",
        "categories": ["games"],
        "icons": [
            {
                "src": f"{SITE}/static/games/icon-192.png",
                "sizes": "192x192",
                "type": "image/png",
                "purpose": "any",
            },
            {
                "src": f"{SITE}/static/games/icon-512.png",
                "sizes": "512x512",
                "type": "image/png",
                "purpose": "any",
            },
            {
                "src": f"{SITE}/static/games/icon-maskable-512.png",
                "sizes": "512x512",
                "type": "image/png",
                "purpose": "maskable",
            },
        ],
    }


def test_the_manifest_of_a_right_to_left_language(client):
    manifest = json.loads(client.get("/manifest/ar.webmanifest").content)
    assert (manifest["lang"], manifest["dir"]) == ("ar", "rtl")
    manifest = json.loads(client.get("/manifest/pt-br.webmanifest").content)
    assert (manifest["lang"], manifest["dir"]) == ("pt-br", "ltr")


def test_the_icons_are_pngs_of_their_sizes_and_the_maskable_one_fills_its_square(
    client,
):
    manifest = json.loads(client.get("/manifest/en.webmanifest").content)
    for icon in manifest["icons"]:
        served = client.get(icon["src"].removeprefix(SITE))
        assert served.status_code == 200
        assert served["Content-Type"] == "image/png"
        image = Image.open(io.BytesIO(b"".join(served.streaming_content)))
        assert image.format == "PNG"
        assert "x".join(map(str, image.size)) == icon["sizes"]
        corner = image.convert("RGBA").getpixel((0, 0))
        if icon["purpose"] == "maskable":
            assert corner == (255, 255, 255, 255)  # no transparent edge to mask
        else:
            assert corner[3] == 0  # rounded corners: transparent outside


@pytest.mark.parametrize(
    "path",
    [
        "/manifest/xx.webmanifest",
        "/manifest/EN.webmanifest",
        "/manifest/en-us.webmanifest",
        "/manifest/..%2Fen.webmanifest",
        "/manifest/en.webmanifest.webmanifest",
        "/offline/xx/",
        "/offline/pt_BR/",
        "/offline/%D8%B9/",
        "/offline/" + "e" * 5000 + "/",
    ],
)
def test_a_language_the_site_does_not_ship_is_not_found(client, path):
    answer = client.get(path)
    assert answer.status_code == 404
    assert "There is nothing at this address." in answer.text


@pytest.mark.parametrize(
    "path", ["/manifest/en.webmanifest", "/service-worker.js", "/offline/en/"]
)
def test_only_get(client, path):
    answer = client.post(path)
    assert answer.status_code == 405
    assert answer["Allow"] == "GET, HEAD"


# -- the service worker ----------------------------------------------------------


def test_the_worker_is_javascript_at_the_root_revalidated_by_its_etag(client):
    answer = client.get("/service-worker.js")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "text/javascript; charset=utf-8"
    assert answer["Cache-Control"] == "no-cache"
    # At the root, its scope is the whole site: no Service-Worker-Allowed.
    assert "Service-Worker-Allowed" not in answer
    version = worker_site(answer.text)["version"]
    assert answer["ETag"] == f'"{version}"'
    again = client.get("/service-worker.js", headers={"If-None-Match": f'"{version}"'})
    assert again.status_code == 304
    assert again.content == b""
    source = (GAMES_STATIC / "service_worker.js").read_text()
    assert answer.text.endswith("\n\n" + source)


def test_the_worker_precaches_the_static_files_and_offline_pages_never_a_page(
    client,
):
    site = worker_site(client.get("/service-worker.js").text)
    own = [f"/static/games/{name}" for name in own_static_files()]
    assert site["static"] == own
    assert "/static/games/app.css" in own
    assert "/static/games/offline.js" in own
    assert site["offline"] == {code: f"/offline/{code}/" for code in LANGUAGES}
    assert site["defaultLanguage"] == "en"
    assert "/static/games/service_worker.js" not in site["static"]
    for url in [*site["static"], *site["offline"].values()]:
        assert url.startswith(("/static/games/", "/offline/")), url
    assert "/" not in site["static"]
    assert not any(url.startswith("/games/") for url in site["static"])


def test_the_worker_changes_when_a_static_file_does(client, tmp_path, settings):
    before = client.get("/service-worker.js")
    copy = tmp_path / "static"
    shutil.copytree(ROOT / "static", copy)
    settings.STATICFILES_DIRS = [copy]
    web_app.worker.cache_clear()
    assert client.get("/service-worker.js").text == before.text  # the same files
    with (copy / "games" / "app.css").open("a") as css:
        css.write("/* changed */\n")
    web_app.worker.cache_clear()
    after = client.get("/service-worker.js")
    assert worker_site(after.text)["version"] != worker_site(before.text)["version"]
    assert after["ETag"] != before["ETag"]
    stale = client.get("/service-worker.js", headers={"If-None-Match": before["ETag"]})
    assert stale.status_code == 200


@pytest.mark.processes
def test_released_the_worker_names_the_hashed_static_urls(client, settings):
    """As `make serve` serves them: collected by the manifest storage, each URL
    carries its file's hash, and so do the offline page's links."""
    collected = collected_static()
    settings.STATIC_ROOT = collected
    settings.STORAGES = {
        **django_settings.STORAGES,
        "staticfiles": {
            "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        },
    }
    paths = json.loads((collected / "staticfiles.json").read_text())["paths"]
    hashed = sorted(f"/static/{paths[f'games/{name}']}" for name in own_static_files())
    assert all(re.search(r"\.[0-9a-f]{12}\.\w+$", url) for url in hashed), hashed
    site = worker_site(client.get("/service-worker.js").text)
    assert sorted(site["static"]) == hashed
    offline = client.get("/offline/en/").text
    app_css = f"/static/{paths['games/app.css']}"
    assert f'<link rel="stylesheet" href="{app_css}">' in offline
    assert f'<script src="/static/{paths["games/offline.js"]}" defer>' in offline
    manifest = json.loads(client.get("/manifest/en.webmanifest").content)
    assert manifest["icons"][0]["src"] == f"{SITE}/static/{paths['games/icon-192.png']}"


# -- the offline page ------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_offline_page_in_each_language(client, language):
    answer = client.get(f"/offline/{language}/")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "text/html; charset=utf-8"
    direction = "rtl" if language == "ar" else "ltr"
    assert f'<html lang="{language}" dir="{direction}">' in answer.text
    assert (
        f'<link rel="manifest" href="/manifest/{language}.webmanifest">' in answer.text
    )
    assert 'id="offline-retry"' in answer.text
    assert '<script src="/static/games/offline.js" defer></script>' in answer.text


def test_the_offline_page_in_english_says_so(client):
    html = client.get("/offline/en/").text
    assert "<title>You are offline — tictactoe</title>" in html
    assert "<h1>You are offline</h1>" in html
    assert (
        '<button type="button" class="button primary" id="offline-retry">'
        "Try again</button>" in html
    )
    assert "The page loads again by itself when you are back online." in html


def test_the_offline_page_names_no_viewer_and_holds_no_form_token(client_for, alice):
    """The browser keeps it and shows it to whoever is offline later."""
    html = client_for(alice).get("/offline/en/").text
    assert "alice" not in html
    assert "csrfmiddlewaretoken" not in html
    assert "<form" not in html


def test_the_routes_are_documented():
    rows = [row[0] for row in routes_table()]
    for route in (
        "`/manifest/<language>.webmanifest`",
        "`/service-worker.js`",
        "`/offline/<language>/`",
    ):
        assert any(route in row for row in rows), route


def test_the_content_security_policy_allows_the_manifest_and_worker_of_this_site(
    client,
):
    header = client.get("/accounts/login/")["Content-Security-Policy"]
    policy = dict(part.strip().split(" ", 1) for part in header.split(";"))
    assert policy["manifest-src"] == "'self'"
    assert policy["worker-src"] == "'self'"
