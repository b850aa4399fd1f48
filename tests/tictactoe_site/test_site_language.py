"""The page frame in every language: <html lang dir>, the language menu, the error
pages, and the board that stays left to right when the page mirrors."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import path
from django.utils import translation

from ..conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
# The six languages, each named in itself, in the menu's order.
MENU = [
    ("en", "English"),
    ("fr", "Français"),
    ("de", "Deutsch"),
    ("es", "Español"),
    ("pt-br", "Português (Brasil)"),
    ("ar", "العربية"),
]


class LanguageMenu(HTMLParser):
    """The <html> element's attributes and the language menu's form, fields and
    options, as a browser reads them (entities decoded)."""

    def __init__(self, html: str):
        super().__init__()
        self.html: dict = {}
        self.navs: list[dict] = []
        self.forms: list[dict] = []
        self.labels: dict[str, str] = {}
        self._label_for: str | None = None
        self._option: dict | None = None
        self._button: dict | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        form = self.forms[-1] if self.forms else None
        if tag == "html":
            self.html = attrs
        elif tag == "nav":
            self.navs.append(attrs)
        elif tag == "form":
            self.forms.append(attrs | {"inputs": {}, "options": [], "buttons": []})
        elif tag == "input" and form is not None:
            form["inputs"][attrs.get("name")] = attrs
        elif tag == "select" and form is not None:
            form["select"] = attrs
        elif tag == "option" and form is not None:
            self._option = attrs | {"label": ""}
            form["options"].append(self._option)
        elif tag == "button" and form is not None:
            self._button = attrs | {"label": ""}
            form["buttons"].append(self._button)
        elif tag == "label":
            self._label_for = attrs.get("for")
            self.labels[self._label_for] = ""

    def handle_endtag(self, tag):
        if tag == "option":
            self._option = None
        elif tag == "button":
            self._button = None
        elif tag == "label":
            self._label_for = None

    def handle_data(self, data):
        if self._option is not None:
            self._option["label"] += data.strip()
        if self._button is not None:
            self._button["label"] += data.strip()
        if self._label_for is not None:
            self.labels[self._label_for] += data.strip()

    def menu(self) -> dict:
        (form,) = [f for f in self.forms if f.get("action") == "/i18n/setlang/"]
        return form


def html_element(response) -> str:
    return re.search(r"<html[^>]*>", response.content.decode()).group(0)


def menu_of(response) -> dict:
    return LanguageMenu(response.content.decode()).menu()


# -- <html lang dir> ----------------------------------------------------------


def test_without_accept_language_the_page_is_english_left_to_right(db):
    response = Client().get("/accounts/login/")
    assert response.status_code == 200
    assert html_element(response) == '<html lang="en" dir="ltr">'


@pytest.mark.parametrize(
    ("accept", "element"),
    [
        ("ar", '<html lang="ar" dir="rtl">'),
        ("ar-EG,ar;q=0.9,en;q=0.5", '<html lang="ar" dir="rtl">'),
        ("fr-FR,fr;q=0.9", '<html lang="fr" dir="ltr">'),
        ("de", '<html lang="de" dir="ltr">'),
        ("es", '<html lang="es" dir="ltr">'),
        ("pt-BR", '<html lang="pt-br" dir="ltr">'),
        ("ja", '<html lang="en" dir="ltr">'),  # not shipped: the default
    ],
)
def test_accept_language_sets_lang_and_dir(as_alice, accept, element):
    for url in ("/", "/games/archive/", "/accounts/password/change/"):
        response = as_alice.get(url, HTTP_ACCEPT_LANGUAGE=accept)
        assert response.status_code == 200, url
        assert html_element(response) == element, url


def test_a_game_page_and_a_visitors_page_in_arabic_are_rtl(as_bob, game, db):
    assert html_element(
        as_bob.get(f"/games/{game.pk}/", HTTP_ACCEPT_LANGUAGE="ar")
    ) == ('<html lang="ar" dir="rtl">')
    assert html_element(
        Client().get("/accounts/signup/", HTTP_ACCEPT_LANGUAGE="ar")
    ) == ('<html lang="ar" dir="rtl">')


# -- the language menu --------------------------------------------------------


def test_the_menu_posts_to_set_language_with_this_page_as_next(as_alice, db):
    response = as_alice.get("/games/archive/?result=won", HTTP_ACCEPT_LANGUAGE="fr")
    menu = menu_of(response)
    assert menu["method"] == "post"
    assert menu["inputs"]["next"] == {
        "type": "hidden",
        "name": "next",
        "value": "/games/archive/?result=won",
    }
    assert menu["inputs"]["csrfmiddlewaretoken"]["value"]
    assert menu["select"]["name"] == "language"
    assert [(o["value"], o["lang"], o["label"]) for o in menu["options"]] == [
        (code, code, name) for code, name in MENU
    ]
    assert [o["value"] for o in menu["options"] if "selected" in o] == ["fr"]
    assert len(menu["buttons"]) == 1
    assert menu["buttons"][0]["type"] == "submit"


def test_the_menu_is_labelled_and_in_its_own_navigation(db):
    parsed = LanguageMenu(Client().get("/accounts/login/").content.decode())
    menu = parsed.menu()
    assert parsed.labels[menu["select"]["id"]] == "Language"
    assert {"class": "language-menu", "aria-label": "Language"} in parsed.navs
    assert menu["buttons"][0]["label"] == "Change"
    assert [o["value"] for o in menu["options"] if "selected" in o] == ["en"]


def test_the_menu_keeps_a_local_next_and_drops_a_foreign_one(db):
    keeps = menu_of(Client().get("/accounts/login/?next=/games/7/"))
    assert keeps["inputs"]["next"]["value"] == "/accounts/login/?next=/games/7/"
    drops = menu_of(Client().get("/accounts/login/?next=//evil.com&x=1"))
    assert drops["inputs"]["next"]["value"] == "/accounts/login/?x=1"


def test_the_menu_on_a_players_page_with_a_non_ascii_name(client_for, make_user):
    jose = make_user("josé")
    menu = menu_of(client_for(jose).get("/players/jos%C3%A9/"))
    assert menu["inputs"]["next"]["value"] == "/players/jos%C3%A9/"


def test_choosing_a_language_sets_the_cookie_and_the_next_page_speaks_it(db, alice):
    """Through the menu as a browser sends it, CSRF checks on."""
    client = Client(enforce_csrf_checks=True)
    login = client.get("/accounts/login/")
    token = menu_of(login)["inputs"]["csrfmiddlewaretoken"]["value"]
    assert (
        client.post(
            "/accounts/login/",
            {"login": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
        ).status_code
        == 302
    )
    lobby = client.get("/games/archive/?result=won")
    menu = menu_of(lobby)
    response = client.post(
        "/i18n/setlang/",
        {
            "language": "de",
            "next": menu["inputs"]["next"]["value"],
            "csrfmiddlewaretoken": menu["inputs"]["csrfmiddlewaretoken"]["value"],
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/games/archive/?result=won"
    assert response.cookies[django_settings.LANGUAGE_COOKIE_NAME].value == "de"
    after = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="fr")
    assert html_element(after) == '<html lang="de" dir="ltr">'
    assert [o["value"] for o in menu_of(after)["options"] if "selected" in o] == ["de"]


def test_the_cached_lobby_and_game_page_follow_the_language(as_bob, game):
    """games.page_cache keys on the language: the menu's choice and <html lang>
    are never another language's."""
    for url in ("/", f"/games/{game.pk}/"):
        for code, direction in [("en", "ltr"), ("ar", "rtl"), ("de", "ltr")] * 2:
            as_bob.cookies[django_settings.LANGUAGE_COOKIE_NAME] = code
            response = as_bob.get(url)
            assert html_element(response) == (f'<html lang="{code}" dir="{direction}">')
            selected = [
                o["value"] for o in menu_of(response)["options"] if "selected" in o
            ]
            assert selected == [code], url


@pytest.mark.parametrize("page", ["lobby", "game"])
def test_another_language_costs_no_query_more(as_bob, game, page):
    url = "/" if page == "lobby" else f"/games/{game.pk}/"
    counts = {}
    for code in ("en", "ar"):
        as_bob.cookies[django_settings.LANGUAGE_COOKIE_NAME] = code
        as_bob.get(url)  # fill the page cache
        with CaptureQueriesContext(connection) as queries:
            assert as_bob.get(url).status_code == 200
        counts[code] = len(queries)
    assert counts["ar"] == counts["en"]


# -- error pages --------------------------------------------------------------


def test_error_pages_are_in_the_language_of_the_request(as_alice, db):
    response = as_alice.get("/games/999999/", HTTP_ACCEPT_LANGUAGE="ar")
    assert response.status_code == 404
    assert html_element(response) == '<html lang="ar" dir="rtl">'
    assert menu_of(response)["inputs"]["next"]["value"] == "/games/999999/"


@pytest.mark.parametrize(
    ("language", "element"),
    [("en", '<html lang="en" dir="ltr">'), ("ar", '<html lang="ar" dir="rtl">')],
)
def test_500_html_renders_without_context_or_urls(language, element, settings):
    """As django.views.defaults.server_error renders it: no context, and here a
    URLconf without any of the site's names."""
    settings.ROOT_URLCONF = "tests.tictactoe_site.test_site_language"
    with translation.override(language):
        html = render_to_string("500.html")
    assert element in html
    assert '<a href="/">' in html


def boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom), path("fine/", lambda r: HttpResponse("ok"))]


@pytest.mark.parametrize(
    ("accept", "element"),
    [("en", '<html lang="en" dir="ltr">'), ("ar", '<html lang="ar" dir="rtl">')],
)
def test_a_server_error_page_is_in_the_language_of_the_request(
    db, settings, accept, element
):
    settings.ROOT_URLCONF = "tests.tictactoe_site.test_site_language"
    client = Client(raise_request_exception=False)
    response = client.get("/boom/", HTTP_ACCEPT_LANGUAGE=accept)
    assert response.status_code == 500
    assert element in response.content.decode()
    assert "a bug" not in response.content.decode()


# -- right to left: the page mirrors, the board does not ----------------------


def css_rules() -> dict[str, str]:
    """app.css as {selector list: declarations}, comments removed (the media
    queries' rules are listed under their own selectors too)."""
    css = re.sub(
        r"/\*.*?\*/", "", (ROOT / "static/games/app.css").read_text(), flags=re.S
    )
    rules = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        rules[" ".join(selectors.split())] = body
    return rules


def test_the_board_is_laid_out_left_to_right_in_every_language():
    rules = css_rules()
    assert re.search(r"(^|;)\s*direction:\s*ltr\s*(;|$)", rules[".board"])
    # The game page's board (and the replay's, the same table) carries the class.
    template = (ROOT / "templates/games/game_detail.html").read_text()
    assert '<table class="board' in template


def test_the_page_layout_uses_no_left_or_right():
    """Margins, paddings, borders, positions and alignment follow the direction
    (logical properties), except on the board, which never mirrors."""
    physical = re.compile(
        r"(margin|padding|border)-(left|right)|(^|[;\s])(left|right)\s*:"
        r"|text-align:\s*(left|right)|float:\s*(left|right)"
    )
    offenders = {
        selector: body
        for selector, body in css_rules().items()
        if physical.search(body) and not selector.startswith(".board")
    }
    assert offenders == {}
