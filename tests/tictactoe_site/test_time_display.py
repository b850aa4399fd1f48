"""Times shown to a person (tictactoe_site.lib.times, games.templatetags.times): in
their zone, named, formatted for their language; "… ago" for a recent time on a
page rendered per request. Every expected text below is worked out by hand from
the stored UTC time, not by the code under test."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from allauth.usersessions.models import UserSession
from django.utils import timezone, translation

from accounts.middleware import apply_preferences
from accounts.models import Preferences
from games.models import Game
from tictactoe_site.lib import times

from ..conftest import X_WINS_ROW_0, new_game
from ..support.account_client import login

# Wednesday 15 January 2025, 14:34 UTC: 11:34 in São Paulo (UTC-3, no summer
# time since 2019), 23:34 in Tokyo (UTC+9).
FINISHED = datetime(2025, 1, 15, 14, 34, tzinfo=UTC)
ISO = "2025-01-15T14:34:00Z"


def element(text: str, title: str | None = None) -> str:
    return f'<time datetime="{ISO}" title="{title or text}">{text}</time>'


@pytest.fixture
def finished(alice, bob, play):
    game = play(new_game(alice, bob), *X_WINS_ROW_0)
    Game.objects.filter(pk=game.pk).update(finished_at=FINISHED)
    return game


def viewer(client_for, user, *, zone="", language=""):
    """`user`'s browser, logged in after choosing (the session copies them)."""
    if zone or language:
        Preferences.objects.create(user=user, time_zone=zone, language=language)
    return client_for(user)


@pytest.mark.parametrize("path", ["/games/archive/", "/players/alice/"])
def test_two_players_see_one_finished_game_in_their_own_zones(
    finished, alice, bob, client_for, path
):
    in_sao_paulo = viewer(client_for, alice, zone="America/Sao_Paulo")
    in_tokyo = viewer(client_for, bob, zone="Asia/Tokyo")
    bobs_path = path.replace("alice", "bob")
    assert element("Jan. 15, 2025, 11:34 a.m. Brazil (São Paulo) Time") in (
        in_sao_paulo.get(path).text
    )
    assert element("Jan. 15, 2025, 11:34 p.m. Japan Time") in (
        in_tokyo.get(bobs_path).text
    )


def test_without_a_zone_times_are_utc_labelled_utc(finished, alice, client_for):
    page = viewer(client_for, alice).get("/games/archive/").text
    assert element("Jan. 15, 2025, 2:34 p.m. UTC") in page


def test_a_player_who_said_utc_reads_utc(finished, alice, client_for):
    page = viewer(client_for, alice, zone="UTC").get("/games/archive/").text
    assert element("Jan. 15, 2025, 2:34 p.m. UTC") in page


def test_a_visitors_zone_cookie_applies_and_a_players_account_wins(
    finished, alice, client_for, rf
):
    """No page shows a visitor a time yet: the middleware, as it sets the zone
    for the request; then a player, whose zone is their account's alone."""
    seen = []

    def page(request):
        seen.append((timezone.get_current_timezone_name(), request.time_zone_known))

    request = rf.get("/")
    request.COOKIES["timezone"] = "Asia/Tokyo"
    apply_preferences(page)(request)
    request.COOKIES["timezone"] = "Mars/Olympus_Mons"
    apply_preferences(page)(request)
    assert seen == [("Asia/Tokyo", True), ("GMT", False)]

    as_alice = viewer(client_for, alice)
    as_alice.cookies["timezone"] = "Asia/Tokyo"
    assert element("Jan. 15, 2025, 2:34 p.m. UTC") in (
        as_alice.get("/games/archive/").text
    )


def test_dates_follow_the_language(finished, alice, bob, client_for):
    """Django's formats for the language: German, in Tokyo."""
    page = viewer(client_for, alice, zone="Asia/Tokyo", language="de")
    assert element("15. Januar 2025 23:34, Japan (Ortszeit)") in (
        page.get("/games/archive/").text
    )
    page = viewer(client_for, bob, zone="America/Sao_Paulo", language="pt-br")
    assert element("15 de janeiro de 2025 às 11:34, Horário Brasil (São Paulo)") in (
        page.get("/games/archive/").text
    )


def test_a_recent_time_says_how_long_ago_with_the_exact_time_in_its_title(
    alice, bob, play, client_for
):
    game = play(new_game(alice, bob), *X_WINS_ROW_0)
    ended = (timezone.now() - timedelta(minutes=3, seconds=10)).replace(microsecond=0)
    Game.objects.filter(pk=game.pk).update(finished_at=ended)
    tokyo = ended.astimezone(UTC) + timedelta(hours=9)
    clock = f"{tokyo.hour % 12 or 12}" + (f":{tokyo:%M}" if tokyo.minute else "")
    noon = "a.m." if tokyo.hour < 12 else "p.m."
    page = viewer(client_for, alice, zone="Asia/Tokyo").get("/games/archive/").text
    iso = ended.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown = re.search(f'<time datetime="{iso}" title="([^"]+)">([^<]+)</time>', page)
    assert shown[2] == "3 minutes ago"
    assert shown[1].endswith(f", {tokyo.year}, {clock} {noon} Japan Time")
    german = viewer(client_for, bob, language="de").get("/players/bob/").text
    assert ">vor 3\xa0Minuten</time>" in german  # a no-break space before the unit


def test_signed_in_browsers_show_when_in_the_players_zone(alice):
    Preferences.objects.create(user=alice, time_zone="Asia/Tokyo")
    browser = login("alice")
    assert UserSession.objects.filter(user=alice).update(created_at=FINISHED) == 1
    page = browser.get("/accounts/password/change/").text
    assert element("Jan. 15, 2025, 11:34 p.m. Japan Time") in page
    assert "signed in Jan. 15, 2025, 11:34 p.m. Japan Time)" in page


def test_a_cached_page_keeps_exact_times(db):
    """`at` (for the page cache) never says "… ago", which would go stale."""
    recent = timezone.now() - timedelta(minutes=3)
    with timezone.override("Asia/Tokyo"), translation.override("en"):
        kept = times.time_element(recent, relative=False)
        fresh = times.time_element(recent, relative=True)
    assert "ago" not in kept
    assert kept.endswith(" Japan Time</time>")
    assert re.search(r">3 minutes ago</time>$", fresh)


def test_no_time_shows_nothing():
    assert times.time_element(None, relative=True) == ""
