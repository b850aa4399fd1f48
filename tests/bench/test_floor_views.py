"""tests/bench/floor_views.py: the textbook move keeps a game valid and refuses
what a move may not do, changing nothing."""

import pytest

from games.integrity import game_violations
from games.models import Game, GameStatus

from ..conftest import DRAW, X_WINS_ROW_0, snapshot_tables

pytestmark = pytest.mark.urls("tests.bench.floor_urls")


def textbook_move(client, game: Game, row, col):
    return client.post(f"/floor/{game.pk}/textbook-move/", {"row": row, "col": col})


def stored_moves(game: Game) -> list[tuple[int, int, int, str]]:
    return list(
        game.moves.order_by("sequence_number").values_list(
            "sequence_number", "row", "col", "player"
        )
    )


def test_takes_a_move_on_the_users_turn(game, as_alice):
    version = game.version

    response = textbook_move(as_alice, game, 1, 2)

    assert (response.status_code, response["Location"]) == (302, f"/floor/{game.pk}/")
    game.refresh_from_db()
    assert (game.board, game.move_count, game.move_order, game.version) == (
        "-----X---",
        1,
        "5",
        version + 1,
    )
    assert (game.status, game.finished_at) == (GameStatus.IN_PROGRESS, None)
    assert stored_moves(game) == [(1, 1, 2, "X")]


@pytest.mark.parametrize(
    ("cells", "status", "winning_line"),
    [(X_WINS_ROW_0, GameStatus.X_WON, 0), (DRAW, GameStatus.DRAW, None)],
)
def test_plays_a_game_to_its_end_as_the_rules_replay_it(
    game, as_alice, as_bob, cells, status, winning_line
):
    for ply, (row, col) in enumerate(cells):
        client = as_alice if ply % 2 == 0 else as_bob
        assert textbook_move(client, game, row, col).status_code == 302

    game.refresh_from_db()
    assert (game.status, game.winning_line, game.move_count) == (
        status,
        winning_line,
        len(cells),
    )
    assert game.finished_at is not None
    assert game_violations(game, stored_moves(game)) == []


@pytest.mark.parametrize(
    ("opening", "mover", "row", "col", "status", "message"),
    [
        ([], "bob", 0, 0, 403, "It is not your turn."),
        ([(0, 0)], "bob", 0, 0, 409, "That cell is taken."),
        (X_WINS_ROW_0, "bob", 2, 2, 409, "This game is not in progress."),
        ([], "alice", 3, 0, 400, "Row and col must be 0, 1 or 2."),
        ([], "alice", 0, "", 400, "Row and col must be 0, 1 or 2."),
    ],
)
def test_refuses_and_changes_nothing(
    request, game, play, opening, mover, row, col, status, message
):
    play(game, *opening)
    client = request.getfixturevalue(f"as_{mover}")
    before = snapshot_tables()

    response = textbook_move(client, game, row, col)

    assert (response.status_code, response.content.decode()) == (status, message)
    assert snapshot_tables() == before
