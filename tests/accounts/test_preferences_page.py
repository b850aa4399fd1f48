"""The account page "Language and time" (/accounts/preferences/,
accounts.preference_views.preferences_page): a player sees the language and time
zone saved on their account and changes them; the change applies at once on this
browser; junk is refused with a 400 that says why, and nothing is saved."""

import re
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.test import Client

from accounts.middleware import SESSION_KEY
from accounts.models import Preferences
from games.models import Game

from ..conftest import X_WINS_ROW_0, new_game

PAGE = "/accounts/preferences/"
# Wednesday 15 January 2025, 14:34 UTC: 23:34 the same day in Tokyo (UTC+9, no
# summer time).
FINISHED = datetime(2025, 1, 15, 14, 34, tzinfo=UTC)
NOT_A_LANGUAGE = "That is not one of the languages this site is offered in."
NOT_A_ZONE = (
    "That is not the name of a time zone, such as Europe/Paris or America/Sao_Paulo."
)


def stored() -> list[tuple]:
    return list(
        Preferences.objects.order_by("user_id").values_list(
            "user__username", "language", "time_zone"
        )
    )


def selected(page: str, name: str) -> list[str]:
    """The values selected in the page's <select name=`name`>."""
    select = re.search(rf'<select name="{name}".*?</select>', page, re.S)[0]
    return re.findall(r'<option value="([^"]*)"[^>]*\bselected\b', select)


def test_the_page_needs_a_login(db):
    response = Client().get(PAGE)
    assert response.status_code == 302
    assert response.url == f"/accounts/login/?next={PAGE}"


def test_a_visitors_post_saves_nothing(db):
    response = Client().post(PAGE, {"language": "de", "time_zone": "Asia/Tokyo"})
    assert response.status_code == 302
    assert response.url == f"/accounts/login/?next={PAGE}"
    assert stored() == []


def test_other_methods_are_refused(client_for, alice):
    assert client_for(alice).put(PAGE).status_code == 405


def test_nothing_saved_yet_shows_the_browsers_language_and_no_zone(client_for, alice):
    response = client_for(alice).get(PAGE)
    assert response.status_code == 200
    page = response.text
    assert selected(page, "language") == [""]
    assert selected(page, "time_zone") == [""]
    assert '<option value="" selected>Your browser&#x27;s language</option>' in page
    assert (
        '<option value="" selected>Not set: shown in UTC until your browser tells '
        "us</option>"
    ) in page
    # Linked from the account pages' navigation, as this page.
    assert f'<a href="{PAGE}" aria-current="page">Language and time</a>' in page


def test_the_page_shows_the_saved_choices(client_for, alice):
    Preferences.objects.create(user=alice, language="fr", time_zone="America/Sao_Paulo")
    page = client_for(alice).get(PAGE).text
    assert selected(page, "language") == ["fr"]
    assert selected(page, "time_zone") == ["America/Sao_Paulo"]
    # Each language named in itself; zones in the page's language (French here),
    # common ones first, the others by region.
    assert '<option value="ar" lang="ar">العربية</option>' in page
    assert '<option value="pt-br" lang="pt-br">Português (Brasil)</option>' in page
    assert '<optgroup label="Fuseaux les plus courants">' in page
    assert '<optgroup label="Amériques">' in page
    assert '<option value="Asia/Tokyo">Tokyo (Japon)</option>' in page
    assert '<option value="Africa/Dakar">Dakar (Sénégal)</option>' in page
    assert '<option value="Etc/GMT+5">UTC−5</option>' in page
    assert '<option value="UTC">UTC</option>' in page
    # Not offered: the server's own zone, nor another name of UTC.
    assert 'value="localtime"' not in page
    assert 'value="Etc/UTC"' not in page


def test_the_account_nav_links_the_page(client_for, alice):
    page = client_for(alice).get("/accounts/close/").text
    assert f'<a href="{PAGE}">Language and time</a>' in page


def test_a_guest_has_the_page_too(client_for, make_guest):
    guest = make_guest("wanderer")
    browser = client_for(guest)
    assert browser.get(PAGE).status_code == 200
    saved = browser.post(PAGE, {"language": "es", "time_zone": "Europe/Madrid"})
    assert saved.status_code == 302
    assert stored() == [("wanderer", "es", "Europe/Madrid")]


@pytest.fixture
def finished(alice, bob, play):
    game = play(new_game(alice, bob), *X_WINS_ROW_0)
    Game.objects.filter(pk=game.pk).update(finished_at=FINISHED)
    return game


def test_saving_german_and_tokyo_applies_at_once(finished, client_for, alice):
    browser = client_for(alice)
    # The archive before: in UTC, in English.
    before = browser.get("/games/archive/", HTTP_ACCEPT_LANGUAGE="en").text
    assert 'title="Jan. 15, 2025, 2:34 p.m. UTC"' in before

    response = browser.post(
        PAGE,
        {"language": "de", "time_zone": "Asia/Tokyo"},
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == 302
    assert response.url == PAGE
    assert stored() == [("alice", "de", "Asia/Tokyo")]
    assert browser.session[SESSION_KEY]["language"] == "de"
    assert browser.session[SESSION_KEY]["time_zone"] == "Asia/Tokyo"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "de"

    again = browser.get(PAGE, HTTP_ACCEPT_LANGUAGE="en")
    assert again.status_code == 200
    assert '<html lang="de" dir="ltr">' in again.text
    assert [str(message) for message in again.context["messages"]] == ["Gespeichert."]
    assert selected(again.text, "language") == ["de"]
    assert selected(again.text, "time_zone") == ["Asia/Tokyo"]

    # A time shown afterwards: 14:34 UTC is 23:34 in Tokyo, written the German
    # way (Django's "j. F Y H:i"), the zone named.
    archive = browser.get("/games/archive/", HTTP_ACCEPT_LANGUAGE="en").text
    assert '<html lang="de" dir="ltr">' in archive
    assert (
        '<time datetime="2025-01-15T14:34:00Z" title="15. Januar 2025 23:34, '
        'Japan (Ortszeit)">15. Januar 2025 23:34, Japan (Ortszeit)</time>'
    ) in archive


def test_the_browsers_language_and_no_zone_clear_both(client_for, alice):
    Preferences.objects.create(user=alice, language="de", time_zone="Asia/Tokyo")
    browser = client_for(alice)
    browser.cookies[settings.LANGUAGE_COOKIE_NAME] = "de"
    response = browser.post(
        PAGE, {"language": "", "time_zone": ""}, HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert response.status_code == 302
    assert stored() == [("alice", "", "")]
    # The cookie is gone: the browser's own language decides again.
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""
    page = browser.get(PAGE, HTTP_ACCEPT_LANGUAGE="fr")
    assert '<html lang="fr" dir="ltr">' in page.text
    assert browser.session[SESSION_KEY]["time_zone"] == ""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"language": "xx", "time_zone": "Asia/Tokyo"}, NOT_A_LANGUAGE),
        ({"language": "de", "time_zone": "Mars/Olympus_Mons"}, NOT_A_ZONE),
        ({"language": "de", "time_zone": "localtime"}, NOT_A_ZONE),
        ({"language": "de", "time_zone": "+03:00"}, NOT_A_ZONE),
        ({"language": "de", "time_zone": "../../etc/passwd"}, NOT_A_ZONE),
        ({"language": "de", "time_zone": "Asia/Tokyo" * 10}, NOT_A_ZONE),
    ],
)
def test_junk_is_refused_and_nothing_changes(client_for, alice, data, message):
    Preferences.objects.create(user=alice, language="en", time_zone="Europe/Paris")
    browser = client_for(alice)
    session_before = browser.session.get(SESSION_KEY)
    response = browser.post(PAGE, data)
    assert response.status_code == 400
    assert message in response.text
    assert stored() == [("alice", "en", "Europe/Paris")]
    assert browser.session.get(SESSION_KEY) == session_before
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies


def test_the_page_costs_a_fixed_number_of_queries(
    client_for, alice, django_assert_num_queries
):
    Preferences.objects.create(user=alice, language="fr", time_zone="Europe/Paris")
    browser = client_for(alice)
    browser.get(PAGE)  # the first page of a session may write it
    # The user (their session's), and the choices saved on the account.
    with django_assert_num_queries(2):
        assert browser.get(PAGE).status_code == 200


def test_a_zone_saved_under_an_old_name_is_selected_under_its_current_one(
    client_for, alice
):
    """The menu lists each place once, under its current id."""
    Preferences.objects.create(user=alice, language="en", time_zone="Asia/Calcutta")
    page = client_for(alice).get(PAGE).text
    assert selected(page, "time_zone") == ["Asia/Kolkata"]
    assert 'value="Asia/Calcutta"' not in page
    assert '<option value="Asia/Kolkata" selected>Kolkata (India)</option>' in page
