"""Starting and joining games through the lobby's form and the join route,
and the limits on open games and unanswered challenges."""

import pytest
from django.contrib.auth import get_user_model

from games import services
from games.models import Game

from ..conftest import PASSWORD, snapshot_tables
from .test_views_game import buttons, move, text


@pytest.mark.parametrize(
    ("side", "x_name"), [("x", "alice"), ("o", "bob"), ("", "alice")]
)
def test_create_against_a_named_opponent(as_alice, bob, side, x_name):
    response = as_alice.post("/games/new/", {"opponent": "bob", "side": side})
    game = Game.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    assert game.player_x.username == x_name
    assert {game.player_x.username, game.player_o.username} == {"alice", "bob"}
    assert game.status == "in_progress"


def test_create_with_random_side(as_alice, bob, settings):
    settings.GAMES_MAX_UNSTARTED_PER_USER = 30
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 30
    for _ in range(30):
        assert (
            as_alice.post(
                "/games/new/", {"opponent": "bob", "side": "random"}
            ).status_code
            == 302
        )
    x_players = set(Game.objects.values_list("player_x__username", flat=True))
    assert x_players == {"alice", "bob"}


def test_create_open_game_and_join_it(as_alice, as_bob, alice, bob):
    response = as_alice.post("/games/new/", {"opponent": "", "side": "o"})
    game = Game.objects.get()
    assert response.status_code == 302
    assert game.status == "waiting"
    page = as_alice.get(f"/games/{game.pk}/")
    assert "Waiting for an opponent to join" in text(page)
    assert buttons(page) == set()

    invite = as_bob.get(f"/games/{game.pk}/")
    assert "Join this game" in text(invite)
    assert f"Join game {game.pk}" in text(as_bob.get("/"))  # listed in the lobby
    joined = as_bob.post(f"/games/{game.pk}/join/")
    assert joined.status_code == 302
    game.refresh_from_db()
    assert (game.player_x, game.player_o, game.status) == (bob, alice, "in_progress")
    assert "You joined the game." in text(as_bob.get(joined["Location"]))


def test_create_self_play(as_alice, alice):
    as_alice.post("/games/new/", {"opponent": "alice", "side": "x"})
    game = Game.objects.get()
    assert game.player_x == game.player_o == alice
    url = f"/games/{game.pk}/"
    assert move(as_alice, game, 0, 0).status_code == 302
    page = as_alice.get(url)
    assert "Your turn (O)." in text(page)
    assert len(buttons(page)) == 8
    assert move(as_alice, game, 1, 1).status_code == 302
    assert Game.objects.get().board == "X---O----"


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"opponent": "nobody"}, 400, "There is no player called “nobody”."),
        ({"opponent": "bob", "side": "purple"}, 400, "Choose a side: X, O or random."),
        ({"opponent": "b" * 151}, 400, "at most 150 characters"),
    ],
)
def test_create_rejections(as_alice, bob, data, status, message):
    response = as_alice.post("/games/new/", data)
    assert response.status_code == status
    assert message in text(response)
    assert Game.objects.count() == 0


def test_open_game_limit_is_a_429_with_a_message(as_alice, settings):
    settings.GAMES_MAX_OPEN_PER_USER = 1
    assert as_alice.post("/games/new/", {}).status_code == 302
    response = as_alice.post("/games/new/", {})
    assert response.status_code == 429
    assert (
        "You already have 1 open game waiting for players. "
        "Wait for someone to join it." in text(response)
    )
    assert Game.objects.count() == 1


def test_join_rejections(as_alice, as_carol, game, alice):
    open_game = services.create_game(creator=alice)
    before = snapshot_tables()
    own = as_alice.post(f"/games/{open_game.pk}/join/")
    assert own.status_code == 409
    assert "You created this game: share its address" in text(own)
    full = as_carol.post(f"/games/{game.pk}/join/")
    assert full.status_code == 409
    assert "This game already has two players." in text(full)
    assert as_carol.post("/games/99999/join/").status_code == 404
    assert snapshot_tables() == before


# -- challenge limits -----------------------------------------------------


def test_challenge_limits_are_a_429_with_a_message(as_alice, bob, carol, settings):
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 1
    settings.GAMES_MAX_UNSTARTED_PER_USER = 2
    assert as_alice.post("/games/new/", {"opponent": "bob"}).status_code == 302
    again = as_alice.post("/games/new/", {"opponent": "bob"})
    assert again.status_code == 429
    assert (
        "You already have 1 game against bob in which they have not moved yet."
        in text(again)
    )
    assert as_alice.post("/games/new/", {"opponent": "carol"}).status_code == 302
    before = snapshot_tables()
    third = as_alice.post("/games/new/", {"opponent": "alice2"})
    assert third.status_code == 400  # no such player: parsed before the limits
    get_user_model().objects.create_user("dave", password=PASSWORD)
    full = as_alice.post("/games/new/", {"opponent": "dave"})
    assert full.status_code == 429
    assert "You already have 2 games in which your opponent has not moved" in text(full)
    assert snapshot_tables() == before
    assert as_alice.post("/games/new/", {"opponent": "alice"}).status_code == 302


def test_a_refused_opponent_is_described_by_its_help_and_its_error(as_alice):
    """The opponent is Django's field group (label, help text, error, input):
    Django points the refused field's aria-describedby at its help text and its
    error; the sides keep the one chosen."""
    page = text(as_alice.post("/games/new/", {"opponent": "nobody", "side": "o"}))
    assert '<label for="id_opponent">Opponent&#x27;s username:</label>' in page
    assert (
        '<input type="text" name="opponent" value="nobody" autocomplete="off" '
        'maxlength="150" aria-invalid="true" '
        'aria-describedby="id_opponent_helptext id_opponent_error" id="id_opponent">'
    ) in page
    assert (
        '<div class="helptext" id="id_opponent_helptext">Blank: an open game anyone '
        "may join. Your own username: play both sides.</div>"
    ) in page
    assert (
        '<ul class="errorlist" id="id_opponent_error">'
        "<li>There is no player called “nobody”.</li></ul>"
    ) in page
    assert (
        '<label class="choice" for="id_side_1">'
        '<input type="radio" name="side" value="o" id="id_side_1" checked> O</label>'
    ) in page
    assert (
        '<label class="choice" for="id_invite"><input type="checkbox" name="invite" '
        'aria-describedby="id_invite_helptext" id="id_invite"> Invite by link</label>'
    ) in page


def test_a_refused_side_is_described_by_its_error(as_alice):
    page = text(as_alice.post("/games/new/", {"side": "purple"}))
    assert '<fieldset aria-describedby="id_side_error">' in page
    assert "<legend>Your side:</legend>" in page
    assert (
        '<ul class="errorlist" id="id_side_error">'
        "<li>Choose a side: X, O or random.</li></ul>"
    ) in page
    assert 'value="x" id="id_side_0" aria-invalid="true">' in page
