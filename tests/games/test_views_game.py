"""The game page and its routes: whole games played over HTTP, refused moves
and actions, what each viewer sees, and what a move costs in queries.

`buttons`, `move` and `text` read pages and post moves for the other view tests."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from games import services
from games.models import Game, Move

from ..conftest import snapshot_tables
from ..support.bodies import text

CELL_BUTTON = re.compile(
    r'<input type="hidden" name="row" value="(\d)">\s*'
    r'<input type="hidden" name="col" value="(\d)">\s*'
    r'<input type="hidden" name="ply" value="(\d)">\s*'
    r'<button type="submit" class="cell-button"'
)


def buttons(response) -> set[tuple[int, int]]:
    """The cells that are POST buttons on a rendered game page."""
    return {
        (int(row), int(col))
        for row, col, _ in CELL_BUTTON.findall(response.content.decode())
    }


def move(client, game, row, col, **extra):
    return client.post(f"/games/{game.pk}/move/", {"row": row, "col": col, **extra})


# -- playing whole games --------------------------------------------------


def play_through_http(clients, game, cells):
    """Alternate X and O clients over `cells`, checking state.json after each."""
    for number, (row, col) in enumerate(cells):
        client = clients[number % 2]
        response = move(client, game, row, col, ply=number)
        assert response.status_code == 302, text(response)
        assert response["Location"] == f"/games/{game.pk}/"
        state = client.get(f"/games/{game.pk}/state.json").json()
        board = Game.objects.get(pk=game.pk).rules_board
        assert state["board"] == [
            [cell.value if cell else None for cell in row] for row in board.rows()
        ]
        assert state["ply"] == number + 1
        assert state["moves"][-1] == {
            "sequence_number": number + 1,
            "player": "XO"[number % 2],
            "row": row,
            "col": col,
        }
    game.refresh_from_db()
    return game


def test_x_wins(as_alice, as_bob, game):
    game = play_through_http(
        [as_alice, as_bob], game, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
    )
    assert game.status == "x_won"
    state = as_bob.get(f"/games/{game.pk}/state.json").json()
    assert state == state | {
        "status": "x_won",
        "winner": "X",
        "current_player": None,
        "winning_line": [[0, 0], [0, 1], [0, 2]],
        "player_x": "alice",
        "player_o": "bob",
    }
    page = as_bob.get(f"/games/{game.pk}/")
    assert "alice (X) wins!" in text(page)
    assert "You win!" in text(as_alice.get(f"/games/{game.pk}/"))
    assert text(page).count("cell cell-win") == 3
    assert buttons(page) == set()
    assert "Rematch (sides swapped)" in text(page)
    assert "1. X: row 1, column 1" in text(page)
    assert "5. X: row 1, column 3" in text(page)


def test_o_wins(as_alice, as_bob, game):
    game = play_through_http(
        [as_alice, as_bob], game, [(0, 0), (0, 2), (1, 0), (1, 1), (2, 2), (2, 0)]
    )
    assert (game.status, game.winning_cells) == ("o_won", [(0, 2), (1, 1), (2, 0)])
    assert "bob (O) wins!" in text(as_alice.get(f"/games/{game.pk}/"))


def test_draw(as_alice, as_bob, game):
    cells = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]
    game = play_through_http([as_alice, as_bob], game, cells)
    assert game.status == "draw"
    state = as_alice.get(f"/games/{game.pk}/state.json").json()
    assert (state["winner"], state["winning_line"]) == (None, None)
    assert "Draw." in text(as_alice.get(f"/games/{game.pk}/"))


def test_forfeit_by_x(as_alice, as_bob, game):
    page = as_alice.get(f"/games/{game.pk}/")
    assert "Yes, forfeit this game" in text(page)
    assert "Yes, forfeit this game" not in text(as_bob.get(f"/games/{game.pk}/"))
    response = as_alice.post(f"/games/{game.pk}/forfeit/")
    assert response.status_code == 302
    game.refresh_from_db()
    assert game.status == "x_forfeits"
    assert "You win: alice (X) forfeited." in text(as_bob.get(f"/games/{game.pk}/"))


def test_forfeit_by_o(as_alice, as_bob, game):
    move(as_alice, game, 1, 1)
    assert as_bob.post(f"/games/{game.pk}/forfeit/").status_code == 302
    game.refresh_from_db()
    assert (game.status, game.winner_mark) == ("o_forfeits", "X")


def test_rematch_swaps_sides_and_shows_the_series(as_alice, as_bob, game, bob, alice):
    as_alice.post(f"/games/{game.pk}/forfeit/")
    response = as_bob.post(f"/games/{game.pk}/rematch/")
    rematch = Game.objects.exclude(pk=game.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/games/{rematch.pk}/"
    assert (rematch.player_x, rematch.player_o) == (bob, alice)
    # The other player's rematch click lands in the same game.
    assert as_alice.post(f"/games/{game.pk}/rematch/")["Location"] == (
        f"/games/{rematch.pk}/"
    )
    page = as_alice.get(f"/games/{rematch.pk}/")
    assert "Series: bob 1 – 0 alice" in text(page)
    assert Game.objects.count() == 2


# -- refusals -------------------------------------------------------------


@pytest.fixture
def started(game, as_alice):
    move(as_alice, game, 0, 0)  # X at (0, 0); O (bob) to move.
    game.refresh_from_db()
    return game


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "Choose a cell on the board."),
        ({"row": "1"}, "Choose a cell on the board"),
        ({"row": "a", "col": "1"}, "Choose a cell on the board"),
        ({"row": "3", "col": "1"}, "Choose a cell on the board"),
        ({"row": "-1", "col": "1"}, "Choose a cell on the board"),
        ({"row": "1.5", "col": "1"}, "Choose a cell on the board"),
        ({"row": "1", "col": "1", "ply": "x"}, "did not say which board you saw"),
        ({"row": "1", "col": "1", "ply": "10"}, "did not say which board you saw"),
    ],
)
def test_malformed_moves_are_400(as_bob, started, data, message):
    before = snapshot_tables()
    response = as_bob.post(f"/games/{started.pk}/move/", data)
    assert response.status_code == 400
    assert message in text(response)
    assert 'role="alert"' in text(response)
    assert snapshot_tables() == before


def test_rejected_moves_have_documented_codes_and_change_nothing(
    as_alice, as_bob, as_carol, started
):
    cases = [
        (as_alice, {"row": 1, "col": 1}, 403, "It is not your turn."),
        (as_carol, {"row": 1, "col": 1}, 403, "You are not a player in this game."),
        (as_bob, {"row": 0, "col": 0}, 409, "That cell is already taken."),
        (
            as_bob,
            {"row": 1, "col": 1, "ply": 0},
            409,
            "The board changed since you saw it.",
        ),
    ]
    for client, data, status, message in cases:
        before = snapshot_tables()
        response = client.post(f"/games/{started.pk}/move/", data)
        assert (response.status_code, message in text(response)) == (status, True)
        assert snapshot_tables() == before


def test_move_after_the_end_is_409(as_alice, as_bob, started):
    as_bob.post(f"/games/{started.pk}/forfeit/")
    before = snapshot_tables()
    response = move(as_alice, started, 2, 2)
    assert response.status_code == 409
    assert "The game is over" in text(response)
    assert snapshot_tables() == before


def test_double_submitted_move_is_stale_not_a_second_move(as_bob, started):
    first = move(as_bob, started, 1, 1, ply=1)
    second = move(as_bob, started, 1, 1, ply=1)
    assert (first.status_code, second.status_code) == (302, 409)
    assert Move.objects.filter(game=started).count() == 2


def test_forfeit_out_of_turn_is_403(as_alice, started):
    before = snapshot_tables()
    response = as_alice.post(f"/games/{started.pk}/forfeit/")
    assert response.status_code == 403
    assert "You can only forfeit on your own turn." in text(response)
    assert snapshot_tables() == before


def test_rematch_before_the_end_is_409_and_by_a_stranger_403(
    as_alice, as_carol, started
):
    before = snapshot_tables()
    assert as_alice.post(f"/games/{started.pk}/rematch/").status_code == 409
    assert as_carol.post(f"/games/{started.pk}/rematch/").status_code == 403
    assert snapshot_tables() == before


def test_unknown_game_is_404_with_a_message(as_alice):
    for url in ["/games/424242/", "/games/424242/state.json"]:
        assert as_alice.get(url).status_code == 404
    response = move(as_alice, Game(pk=424242), 0, 0)
    assert response.status_code == 404
    assert "There is no such game." in text(response)
    assert (
        "There is no such game."
        in as_alice.get("/games/424242/state.json").json()["error"]
    )
    assert "There is nothing at this address." in text(as_alice.get("/nowhere/"))


@pytest.mark.parametrize("route", ["move", "join", "forfeit", "rematch"])
def test_wrong_method_is_405_with_a_message(as_alice, started, route):
    response = as_alice.get(f"/games/{started.pk}/{route}/")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert "only takes what a button or form of this site sends" in text(response)


def test_get_only_pages_refuse_post(as_alice, started):
    for url in ["/", f"/games/{started.pk}/", f"/games/{started.pk}/state.json"]:
        assert as_alice.post(url).status_code == 405


@pytest.mark.parametrize("route", ["move", "join", "forfeit", "rematch"])
def test_anonymous_posts_go_to_login_and_change_nothing(started, route):
    before = snapshot_tables()
    response = Client().post(f"/games/{started.pk}/{route}/", {"row": 1, "col": 1})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert snapshot_tables() == before


def test_anonymous_pages_go_to_login(started, alice):
    """The lobby, and a game not started yet but its page (Play as guest);
    a started game is public by link (tests/games/test_public_games.py)."""
    waiting = services.create_game(creator=alice)
    for url in [
        "/",
        f"/games/{waiting.pk}/state.json",
        f"/games/{waiting.pk}/live/",
    ]:
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_csrf_is_enforced(started, bob):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    before = snapshot_tables()
    response = client.post(f"/games/{started.pk}/move/", {"row": 1, "col": 1})
    assert response.status_code == 403
    assert "security token is missing or out of date" in text(response)
    assert snapshot_tables() == before
    # With the token from the page, the same move is accepted.
    page = client.get(f"/games/{started.pk}/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(page))[1]
    response = client.post(
        f"/games/{started.pk}/move/",
        {"row": 1, "col": 1, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302


# -- what each viewer sees ------------------------------------------------


def test_buttons_exactly_in_empty_cells_for_the_player_to_move(
    as_alice, as_bob, as_carol, game
):
    url = f"/games/{game.pk}/"
    all_cells = {(r, c) for r in range(3) for c in range(3)}
    assert buttons(as_alice.get(url)) == all_cells
    assert buttons(as_bob.get(url)) == set()
    move(as_alice, game, 1, 1)
    bob_page = as_bob.get(url)
    assert buttons(bob_page) == all_cells - {(1, 1)}
    assert set(CELL_BUTTON.findall(text(bob_page))) == {
        (str(r), str(c), "1") for r, c in all_cells - {(1, 1)}
    }
    assert "Your turn." in text(bob_page)
    alice_page = as_alice.get(url)
    assert buttons(alice_page) == set()
    assert "Waiting for bob (O)." in text(alice_page)
    spectator = as_carol.get(url)
    assert spectator.status_code == 200
    assert buttons(spectator) == set()
    assert "Forfeit" not in text(spectator)
    assert "X: row 2, column 2" in text(spectator)
    assert 'aria-label="Place O in row 1, column 1"' in text(bob_page)


# -- a move's queries -----------------------------------------------------


def test_move_post_query_count(as_bob, started, django_assert_num_queries):
    # user, the move's read (game and players, no lock), the game's UPDATE if
    # its version is unchanged, insert move; inside the test's own transaction
    # the service's atomic() adds SAVEPOINT + RELEASE.
    with django_assert_num_queries(6):
        assert move(as_bob, started, 1, 1, ply=1).status_code == 302


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK")


def _statements(queries) -> list[str]:
    """The SQL a request runs, without transaction control (which SQLite shows
    and PostgreSQL's driver does not)."""
    return [q["sql"] for q in queries if not q["sql"].startswith(TRANSACTION_CONTROL)]


@pytest.mark.parametrize("opponent", ["bob", "alice"], ids=["two players", "self"])
def test_game_ending_move_query_count(client_for, alice, bob, play, opponent):
    # user, the move's read, update game (if its version is unchanged), insert
    # move, update series, insert result rows, upsert records
    game = services.create_game(creator=alice, opponent=locals()[opponent])
    play(game, (0, 0), (1, 1), (0, 1), (2, 2))
    as_alice = client_for(alice)
    with CaptureQueriesContext(connection) as queries:
        response = move(as_alice, game, 0, 2, ply=4)
    assert response.status_code == 302
    assert len(_statements(queries)) == 7
    game.refresh_from_db()
    assert game.status == "x_won"
