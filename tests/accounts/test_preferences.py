"""A person's language and time zone (accounts.preferences): chosen with the
language menu (set_language) and told by the page (/i18n/timezone/), saved on a
player's account and applied on any host after they log in, a cookie for a
visitor; junk refused with a 400 that says why, and nothing stored."""

import pytest
from django.conf import settings
from django.db import IntegrityError, transaction
from django.test import Client

from accounts.middleware import SESSION_KEY, TIME_ZONE_COOKIE
from accounts.models import Preferences
from accounts.services import save_language

from ..conftest import PASSWORD
from ..support.account_client import login

SET_LANGUAGE = "/i18n/setlang/"
SET_ZONE = "/i18n/timezone/"
SCRIPT = "games/timezone.js"


def language_of(response) -> str:
    """The language the page was answered in (LocaleMiddleware's header)."""
    return response.headers["Content-Language"]


def stored() -> list[tuple]:
    return list(
        Preferences.objects.order_by("user_id").values_list(
            "user__username", "language", "time_zone"
        )
    )


# -- languages ----------------------------------------------------------------


def test_a_players_choice_is_saved_and_follows_them_to_another_host(alice):
    browser = login("alice")
    chose = browser.post(SET_LANGUAGE, {"language": "de", "next": "/"})
    assert chose.status_code == 302
    assert chose.url == "/"
    # The cookie is set as Django's view sets it, and the account keeps it.
    assert chose.cookies[settings.LANGUAGE_COOKIE_NAME].value == "de"
    assert stored() == [("alice", "de", "")]
    assert language_of(browser.get("/", HTTP_ACCEPT_LANGUAGE="fr")) == "de"

    # Another host, another browser: no language cookie, a French browser.
    elsewhere = login("alice")
    assert settings.LANGUAGE_COOKIE_NAME not in elsewhere.cookies
    assert language_of(elsewhere.get("/", HTTP_ACCEPT_LANGUAGE="fr")) == "de"
    assert elsewhere.session[SESSION_KEY]["language"] == "de"


def test_a_player_who_picks_another_language_sees_it_on_the_next_page(alice):
    """The session's copy of the saved language, read at login, follows the
    menu's choice at once: not the old one until the next login."""
    save_language(user=alice, language="de")
    browser = login("alice")
    before = browser.get("/")
    assert '<html lang="de" dir="ltr">' in before.text
    assert '<button type="submit" class="link-button">Abmelden</button>' in before.text

    chose = browser.post(SET_LANGUAGE, {"language": "fr", "next": "/"})
    assert chose.status_code == 302
    assert stored() == [("alice", "fr", "")]
    after = browser.get("/", HTTP_ACCEPT_LANGUAGE="de")
    assert language_of(after) == "fr"
    assert '<html lang="fr" dir="ltr">' in after.text
    assert (
        '<button type="submit" class="link-button">Se déconnecter</button>'
        in after.text
    )


def test_the_saved_language_beats_a_cookie_another_visitor_chose(alice):
    Preferences.objects.create(user=alice, language="es")
    browser = Client()
    browser.post(SET_LANGUAGE, {"language": "fr", "next": "/accounts/login/"})
    assert browser.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    logged_in = browser.post(
        "/accounts/login/", {"login": "alice", "password": PASSWORD}
    )
    assert logged_in.status_code == 302
    assert language_of(browser.get("/")) == "es"


def test_a_visitors_choice_is_a_cookie_and_nothing_stored(db):
    visitor = Client()
    assert language_of(visitor.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="fr")) == (
        "fr"
    )
    chose = visitor.post(
        SET_LANGUAGE, {"language": "pt-br", "next": "/accounts/login/"}
    )
    assert chose.status_code == 302
    assert chose.cookies[settings.LANGUAGE_COOKIE_NAME].value == "pt-br"
    page = visitor.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="fr")
    assert language_of(page) == "pt-br"
    assert stored() == []


def test_the_browsers_language_again_clears_the_choice(alice):
    browser = login("alice")
    browser.post(SET_LANGUAGE, {"language": "de", "next": "/"})
    cleared = browser.post(SET_LANGUAGE, {"language": "", "next": "/"})
    assert cleared.status_code == 302
    assert cleared.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""
    assert stored() == [("alice", "", "")]
    assert language_of(browser.get("/", HTTP_ACCEPT_LANGUAGE="es")) == "es"


@pytest.mark.parametrize("code", ["xx", "ja", "de-de-de", "en\x01", "'><b>"])
def test_a_language_not_offered_is_refused_and_nothing_changes(alice, code):
    browser = login("alice")
    before = dict(browser.session)
    refused = browser.post(SET_LANGUAGE, {"language": code, "next": "/"})
    assert refused.status_code == 400
    assert "That is not one of the languages this site is offered in." in (refused.text)
    assert settings.LANGUAGE_COOKIE_NAME not in refused.cookies
    assert stored() == []
    assert dict(browser.session) == before
    visitor = Client()
    refused = visitor.post(SET_LANGUAGE, {"language": code})
    assert refused.status_code == 400
    assert settings.LANGUAGE_COOKIE_NAME not in refused.cookies


def test_set_language_takes_only_posts(db):
    refused = Client().get(SET_LANGUAGE, {"language": "de"})
    assert refused.status_code == 405
    assert "Use the language menu at the top of the page." in refused.text
    assert settings.LANGUAGE_COOKIE_NAME not in refused.cookies


def test_the_database_holds_only_languages_offered(alice):
    with pytest.raises(IntegrityError), transaction.atomic():
        Preferences.objects.create(user=alice, language="xx")


# -- time zones ---------------------------------------------------------------


def test_the_page_asks_for_the_zone_until_it_is_known(alice):
    browser = login("alice")
    assert SCRIPT in browser.get("/").text
    told = browser.post(SET_ZONE, {"time_zone": "America/Sao_Paulo"})
    assert told.status_code == 204
    assert stored() == [("alice", "", "America/Sao_Paulo")]
    # Kept in the session: no query per page, and no more asking.
    assert browser.session[SESSION_KEY]["time_zone"] == "America/Sao_Paulo"
    assert SCRIPT not in browser.get("/").text
    # On another host, after logging in.
    assert SCRIPT not in login("alice").get("/").text


def test_a_zone_known_to_be_utc_is_another_page_than_an_unknown_zone(alice, bob):
    """The page cache keys pages by the zone's name: the lobby that asks for
    the zone is not served to a player whose zone is UTC."""
    as_alice = login("alice")
    as_alice.get("/")  # the login's flash message: not cached
    assert SCRIPT in as_alice.get("/").text  # cached
    assert SCRIPT in as_alice.get("/").text  # from the cache
    assert as_alice.post(SET_ZONE, {"time_zone": "Etc/GMT"}).status_code == 204
    assert stored() == [("alice", "", "UTC")]
    assert SCRIPT not in as_alice.get("/").text


def test_a_visitors_zone_is_a_cookie_and_nothing_stored(db):
    visitor = Client()
    assert SCRIPT in visitor.get("/accounts/login/").text
    told = visitor.post(SET_ZONE, {"time_zone": "Asia/Tokyo"})
    assert told.status_code == 204
    cookie = told.cookies[TIME_ZONE_COOKIE]
    assert cookie.value == "Asia/Tokyo"
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Lax"
    assert stored() == []
    assert SCRIPT not in visitor.get("/accounts/login/").text


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Mars/Olympus_Mons",
        "+03:00",
        "../../etc/passwd",
        "/etc/localtime",
        "localtime",
        "Factory",
        "x" * 99,
    ],
)
def test_a_zone_that_is_not_one_is_refused_and_nothing_changes(alice, name):
    browser = login("alice")
    before = dict(browser.session)
    refused = browser.post(SET_ZONE, {"time_zone": name})
    assert refused.status_code == 400
    assert "That is not the name of a time zone, such as Europe/Paris" in (refused.text)
    assert stored() == []
    assert dict(browser.session) == before
    refused = Client().post(SET_ZONE, {"time_zone": name})
    assert refused.status_code == 400
    assert TIME_ZONE_COOKIE not in refused.cookies


def test_a_junk_zone_cookie_is_ignored(db):
    visitor = Client()
    visitor.cookies[TIME_ZONE_COOKIE] = "Mars/Olympus_Mons"
    page = visitor.get("/accounts/login/")
    assert page.status_code == 200
    assert SCRIPT in page.text  # as unknown: UTC, and the page asks again


def test_telling_the_zone_needs_the_csrf_token(db):
    browser = Client(enforce_csrf_checks=True)
    refused = browser.post(SET_ZONE, {"time_zone": "Asia/Tokyo"})
    assert refused.status_code == 403
    assert TIME_ZONE_COOKIE not in refused.cookies


# -- what it costs ------------------------------------------------------------


def test_saved_preferences_add_no_query_to_the_busy_pages(
    alice, bob, game, play, django_assert_num_queries, client_for
):
    """Read at login into the session: the lobby, the game page and
    state.json cost what they cost without them (tests/games/test_views_queries.py)."""
    Preferences.objects.create(user=alice, language="de", time_zone="Asia/Tokyo")
    as_alice = client_for(alice)
    play(game, (0, 0))
    state = f"/games/{game.pk}/state.json"
    # As tests/games/test_views_queries.py counts them: the lobby (user, version),
    # the game in progress (user, game) and its state.
    for path in ("/", game.get_absolute_url(), state):
        as_alice.get(path)  # rendered into the cache
        with django_assert_num_queries(2):
            page = as_alice.get(path)
        assert page.status_code == 200
        assert language_of(page) == "de"


@pytest.mark.parametrize("zone", ["", "UTC", "Asia/Tokyo", "Etc/GMT-3"])
def test_the_admins_date_filters_work_in_every_zone(make_user, client_for, game, zone):
    """The admin passes the zone's name to the database's date functions: the
    zone of someone whose zone is unknown must be one the database knows."""
    root = make_user("root", is_staff=True, is_superuser=True)
    if zone:
        Preferences.objects.create(user=root, time_zone=zone)
    as_root = client_for(root)
    year = game.created_at.year
    for path in ("/admin/games/game/", f"/admin/games/game/?created_at__year={year}"):
        response = as_root.get(path)
        assert response.status_code == 200
        assert f"Game {game.pk}" in response.text or "1 game" in response.text


def test_the_data_export_holds_the_choices(alice):
    from accounts.data_export import everything_about

    Preferences.objects.create(user=alice, language="ar", time_zone="Asia/Tokyo")
    chosen = everything_about(alice)["preferences"]
    assert (chosen["language"], chosen["time_zone"]) == ("ar", "Asia/Tokyo")
