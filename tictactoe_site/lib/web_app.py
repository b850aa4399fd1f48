"""The site as an installable web app: its manifest (one per language), its
service worker, and the offline page the worker shows when a page cannot load.

The worker's body is static/games/service_worker.js after one line written here
(`SITE`: the version, the static URLs to precache, the offline page of each
language). That line names the static files by their hashed URLs and carries a
digest of everything the worker caches, so a release that changes any of it
changes the worker's bytes: the browser installs the new worker, which drops
the old cache. It is built once per process (a release restarts the processes)
and answered with an ETag, since browsers ask for it after every navigation.

Served at the site's root (/service-worker.js), so its scope is the whole site
without a Service-Worker-Allowed header."""

import functools
import hashlib
import json

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.http import Http404, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import etag

from .error_pages import get_only

# The site's own static files that pages load, which the worker precaches
# (admin's are not, nor files of other kinds such as a font for drawing).
PRECACHED_PREFIX = "games/"
PRECACHED_SUFFIXES = (".css", ".js", ".svg", ".png", ".ico", ".woff2")
WORKER_SOURCE = "games/service_worker.js"
# The page's colour in each scheme (static/games/app.css, --paper): the
# browser's bar around an installed app (templates/web_app_head.html).
THEME_COLOR = "#ffffff"
ICONS = [
    ("games/icon-192.png", "192x192", "any"),
    ("games/icon-512.png", "512x512", "any"),
    ("games/icon-maskable-512.png", "512x512", "maskable"),
]


def _language(code: str) -> str:
    """`code` if the site ships that language; else the address does not exist."""
    if code not in dict(settings.LANGUAGES):
        raise Http404
    return code


def _absolute(path: str) -> str:
    return settings.SITE_URL + path


@get_only
def manifest(request, language: str) -> JsonResponse:
    """The web app manifest in `language` (each page links its own language's)."""
    with translation.override(_language(language)):
        lobby = reverse("lobby")
        body = {
            "id": lobby,
            "name": _("tictactoe: play tic-tac-toe with friends"),
            "short_name": "tictactoe",
            "description": _("Play tic-tac-toe with friends, live, in your browser."),
            "lang": language,
            "dir": "rtl" if translation.get_language_bidi() else "ltr",
            "start_url": _absolute(lobby),
            "scope": _absolute("/"),
            "display": "standalone",
            "theme_color": THEME_COLOR,
            "background_color": THEME_COLOR,
            "categories": ["games"],
            "icons": [
                {
                    "src": _absolute(staticfiles_storage.url(name)),
                    "sizes": sizes,
                    "type": "image/png",
                    "purpose": purpose,
                }
                for name, sizes, purpose in ICONS
            ],
        }
    response = JsonResponse(
        body,
        content_type="application/manifest+json",
        json_dumps_params={"ensure_ascii": False, "indent": 2},
    )
    response["Cache-Control"] = "no-cache"
    return response


@functools.cache
def offline_html(language: str) -> str:
    """The offline page in `language`: the same for everyone (no name, no form
    token), since the worker keeps it and shows it to whoever is offline."""
    with translation.override(language):
        return render_to_string("offline.html")


@get_only
def offline(request, language: str) -> HttpResponse:
    response = HttpResponse(offline_html(_language(language)))
    response["Cache-Control"] = "no-cache"
    return response


def _static_files() -> list[tuple[str, bytes]]:
    """(name, content) of each of the site's own static files, sorted by name."""
    found = {}
    for finder in finders.get_finders():
        for name, storage in finder.list(["*~", ".*"]):
            if (
                name.startswith(PRECACHED_PREFIX)
                and name.endswith(PRECACHED_SUFFIXES)
                and name not in found
            ):
                with storage.open(name) as file:
                    found[name] = file.read()
    return sorted(found.items())


@functools.cache
def worker() -> tuple[str, str]:
    """(the worker's body, its version)."""
    files = dict(_static_files())
    source = files.pop(WORKER_SOURCE)
    static = [staticfiles_storage.url(name) for name in files]
    pages = {
        code: reverse("offline_page", args=[code]) for code, _name in settings.LANGUAGES
    }
    digest = hashlib.sha256(source)
    for url, content in zip(static, files.values(), strict=True):
        digest.update(url.encode() + b"\0" + hashlib.sha256(content).digest())
    for code, url in pages.items():
        digest.update(url.encode() + b"\0" + offline_html(code).encode())
    version = digest.hexdigest()[:20]
    site = {
        "version": version,
        "static": static,
        "offline": pages,
        "defaultLanguage": settings.LANGUAGE_CODE,
    }
    body = f"const SITE = {json.dumps(site, indent=2)};\n\n{source.decode()}"
    return body, version


@get_only
@etag(lambda request: worker()[1])
def service_worker(request) -> HttpResponse:
    response = HttpResponse(worker()[0], content_type="text/javascript; charset=utf-8")
    # Asked again after every navigation: the ETag makes that a 304.
    response["Cache-Control"] = "no-cache"
    return response
