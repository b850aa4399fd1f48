"""Creating and aborting games, limited per user (GAMES_CREATE_ABORT_LIMIT in
10 minutes): each such change wakes every lobby, and a loop of them made every
lobby render again and again. Past the limit, a readable 429 that says when to
try again, and nothing changes."""

from datetime import timedelta

from games.models import Game

from ..conftest import snapshot_tables
from .test_views_game import text


def open_game(client):
    return client.post("/games/new/", {"opponent": "", "side": "x"})


def test_the_default_is_30_in_10_minutes(settings):
    assert settings.GAMES_CREATE_ABORT_LIMIT == 30
    assert timedelta(minutes=10) == settings.GAMES_CREATE_ABORT_WINDOW


def test_creating_and_aborting_in_a_loop_is_refused_past_the_limit(
    settings, as_alice, as_bob, alice, clock
):
    settings.GAMES_CREATE_ABORT_LIMIT = 4
    for _ in range(2):
        created = open_game(as_alice)
        assert created.status_code == 302
        clock.advance(minutes=1)
        game_id = int(created["Location"].strip("/").rsplit("/", 1)[1])
        assert as_alice.post(f"/games/{game_id}/abort/").status_code == 302
        clock.advance(minutes=1)
    # Four changes at 12:00, 12:01, 12:02, 12:03; now 12:04.
    before = snapshot_tables()
    refused = open_game(as_alice)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "360"
    assert (
        "You have created or aborted 4 games in 10 minutes. Please wait 6 minutes "
        "and try again." in text(refused)
    )
    assert snapshot_tables() == before
    # Another player is not affected.
    assert open_game(as_bob).status_code == 302
    clock.advance(minutes=5, seconds=30)
    refused = open_game(as_alice)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "30"
    assert "Please wait 30 seconds and try again." in text(refused)
    clock.advance(seconds=30)  # 12:10: the first change leaves the window
    assert open_game(as_alice).status_code == 302
    assert Game.objects.filter(player_x=alice, status="waiting").count() == 1


def test_an_abort_past_the_limit_is_refused_and_changes_nothing(
    settings, as_alice, game, clock
):
    settings.GAMES_CREATE_ABORT_LIMIT = 1
    assert open_game(as_alice).status_code == 302
    before = snapshot_tables()
    refused = as_alice.post(f"/games/{game.pk}/abort/")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "600"
    assert (
        "You have created or aborted 1 game in 10 minutes. Please wait 10 minutes "
        "and try again." in text(refused)
    )
    assert snapshot_tables() == before


def test_invalid_input_is_not_counted(settings, as_alice, clock):
    settings.GAMES_CREATE_ABORT_LIMIT = 1
    assert as_alice.post("/games/new/", {"side": "sideways"}).status_code == 400
    assert open_game(as_alice).status_code == 302


def test_zero_turns_the_limit_off(settings, as_alice, clock):
    settings.GAMES_CREATE_ABORT_LIMIT = 0
    settings.GAMES_MAX_OPEN_PER_USER = 40
    for _ in range(35):
        assert open_game(as_alice).status_code == 302
