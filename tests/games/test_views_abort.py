"""Abort: before both sides have moved, by either player; an open game
withdrawn by its creator."""

import re

from django.test import Client

from games import services
from games.models import Game

from ..conftest import snapshot_tables
from .test_views_game import text

ABORT_FORM = re.compile(r'<form method="post" action="/games/(\d+)/abort/">')


def test_abort_button_without_confirmation_before_any_move(as_alice, as_carol, game):
    page = text(as_alice.get(f"/games/{game.pk}/"))
    assert len(ABORT_FORM.findall(page)) == 1
    assert '<button type="submit" class="button">Abort</button>' in page
    assert "<summary>Abort…</summary>" not in page
    assert not ABORT_FORM.search(text(as_carol.get(f"/games/{game.pk}/")))


def test_abort_asks_for_confirmation_after_one_move(as_alice, as_bob, game, play):
    play(game, (0, 0))
    for client in (as_alice, as_bob):
        page = text(client.get(f"/games/{game.pk}/"))
        assert "<summary>Abort…</summary>" in page
        assert "Yes, abort this game" in page
    play(game, (1, 1))
    for client in (as_alice, as_bob):
        assert not ABORT_FORM.search(text(client.get(f"/games/{game.pk}/")))


def test_an_aborted_game_says_who_and_offers_a_rematch(as_alice, as_bob, game, play):
    play(game, (0, 0))
    response = as_bob.post(f"/games/{game.pk}/abort/")
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    alice_page = text(as_alice.get(f"/games/{game.pk}/"))
    assert "Aborted by bob." in alice_page
    assert "Rematch (sides swapped)" in alice_page
    assert "1. X: row 1, column 1" in alice_page  # kept, with its moves
    assert not ABORT_FORM.search(alice_page)
    assert "Aborted by you." in text(as_bob.get(f"/games/{game.pk}/"))
    rematch = as_alice.post(f"/games/{game.pk}/rematch/")
    assert rematch.status_code == 302
    new = Game.objects.get(rematch_of=game)
    assert (new.player_x, new.player_o) == (game.player_o, game.player_x)


def test_abort_refusals_change_nothing(as_alice, as_carol, client, game, play):
    play(game, (0, 0), (1, 1))
    before = snapshot_tables()
    late = as_alice.post(f"/games/{game.pk}/abort/")
    assert late.status_code == 409
    assert (
        "Two moves have been played: finish the game or forfeit on your turn."
        in text(late)
    )
    stranger = as_carol.post(f"/games/{game.pk}/abort/")
    assert stranger.status_code == 403
    assert "You are not a player in this game." in text(stranger)
    anonymous = client.post(f"/games/{game.pk}/abort/")
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/accounts/login/?next=/games/{game.pk}/abort/"
    wrong_method = as_alice.get(f"/games/{game.pk}/abort/")
    assert wrong_method.status_code == 405
    assert wrong_method["Allow"] == "POST"
    missing = as_alice.post("/games/424242/abort/")
    assert missing.status_code == 404
    assert snapshot_tables() == before


def test_abort_needs_the_csrf_token(alice, game):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    before = snapshot_tables()
    response = client.post(f"/games/{game.pk}/abort/")
    assert response.status_code == 403
    assert snapshot_tables() == before


def test_state_json_of_an_aborted_game(as_bob, game, alice, play):
    play(game, (0, 0))
    services.abort(game_id=game.pk, user=alice)
    state = as_bob.get(f"/games/{game.pk}/state.json").json()
    assert {
        key: state[key]
        for key in ("status", "winner", "winning_line", "current_player", "ply")
    } == {
        "status": "aborted",
        "winner": None,
        "winning_line": None,
        "current_player": None,
        "ply": 1,
    }
    assert state["moves"] == [{"sequence_number": 1, "player": "X", "row": 0, "col": 0}]


def test_an_open_game_is_withdrawn_by_its_creator(as_alice, as_bob, alice):
    open_game = services.create_game(creator=alice)
    page = text(as_alice.get(f"/games/{open_game.pk}/"))
    assert "Abort (withdraw this open game)" in page
    assert as_alice.post(f"/games/{open_game.pk}/abort/").status_code == 302
    assert f"Join game {open_game.pk}" not in text(as_bob.get("/"))
    gone = as_bob.post(f"/games/{open_game.pk}/join/")
    assert gone.status_code == 409
    assert "This game was aborted: it cannot be joined." in text(gone)
    page = text(as_alice.get(f"/games/{open_game.pk}/"))
    assert "Aborted by you." in page
    assert "Rematch" not in page
