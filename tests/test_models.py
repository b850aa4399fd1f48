"""Database constraints: the database itself refuses an impossible game or move."""

import pytest
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from games import services
from games.models import Game, Move, Series


def rejected_by_database(write) -> bool:
    try:
        with transaction.atomic():
            write()
    except (IntegrityError, DataError):  # DataError: PostgreSQL, value too long
        return True
    return False


@pytest.fixture
def started(game, play):
    return play(game, (0, 0))  # X at the top left; O to move.


def _update(game, **fields):
    return lambda: Game.objects.filter(pk=game.pk).update(**fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "abandoned"},
        {"move_count": 10},
        {"board": "X-------"},  # 8 cells
        {"board": "X--------?"},
        {"board": "Z--------"},
        {"board": "O--------", "move_order": "0"},  # O moved first
        {"board": "XX-------", "move_count": 2, "move_order": "01"},  # X twice
        {"move_count": 2},  # count disagrees with the board
        {"move_order": "01"},  # order disagrees with the count
        {"winning_line": 8},
        {"winning_line": 0},  # a winning line on a running game
        {"status": "x_won"},  # won without a line, not finished
        {"status": "draw", "finished_at": timezone.now()},  # draw on a 1-move board
        {"status": "x_forfeits"},  # finished without finished_at
        {"finished_at": timezone.now()},  # running game with an end time
        {"player_o": None},  # a running game needs both players
        {"status": "waiting"},  # waiting with moves on the board
        {"version": 0},
        {"series": None},
    ],
)
def test_game_constraints_reject_impossible_rows(started, fields):
    assert rejected_by_database(_update(started, **fields))
    started_row = Game.objects.get(pk=started.pk)
    assert started_row.board == "X--------"
    assert started_row.status == "in_progress"


def test_a_consistent_update_is_accepted(started):
    """The constraints are not so strict that a legal state is refused."""
    assert not rejected_by_database(
        _update(
            started,
            board="XO-------",
            move_count=2,
            move_order="01",
        )
    )


def test_waiting_game_must_have_exactly_one_player(alice):
    open_game = services.create_game(creator=alice, opponent=None, side="x")
    assert open_game.status == "waiting"
    assert rejected_by_database(_update(open_game, player_x=None))
    assert rejected_by_database(_update(open_game, player_o=alice))


def test_same_user_may_take_both_sides(alice):
    game = services.create_game(creator=alice, opponent=alice, side="x")
    assert game.player_x == game.player_o == alice
    assert game.status == "in_progress"


def _move(game, **fields):
    values = {"sequence_number": 2, "row": 1, "col": 1, "player": "O"} | fields
    return lambda: Move.objects.create(game=game, **values)


@pytest.mark.parametrize(
    "fields",
    [
        {"sequence_number": 1},  # duplicate sequence number
        {"row": 0, "col": 0},  # duplicate cell
        {"row": 3},
        {"col": 3},
        {"sequence_number": 0, "player": "X", "row": 2},
        {"sequence_number": 10, "player": "O", "row": 2},
        {"player": "Z"},
        {"player": "X"},  # X on an even move
    ],
)
def test_move_constraints_reject_impossible_rows(started, fields):
    assert rejected_by_database(_move(started, **fields))
    assert list(Move.objects.filter(game=started).values_list("row", "col")) == [(0, 0)]


def test_a_legal_move_row_is_accepted(started):
    assert not rejected_by_database(_move(started))


def test_series_pair_is_ordered_and_unique(alice, bob, game):
    low, high = sorted([alice, bob], key=lambda user: user.pk)
    assert rejected_by_database(
        lambda: Series.objects.create(player_a=high, player_b=low)
    )
    assert rejected_by_database(
        lambda: Series.objects.create(player_a=low, player_b=high)
    )


def test_game_str_and_url(game):
    assert str(game) == f"Game {game.pk}: alice vs bob"
    assert game.get_absolute_url() == f"/games/{game.pk}/"
    assert str(Move(sequence_number=1, player="X", row=0, col=2)) == "1. X (0, 2)"


def test_marks_for_each_kind_of_viewer(game, alice, bob, carol):
    assert game.marks_for(alice) == ["X"]
    assert game.marks_for(bob) == ["O"]
    assert game.marks_for(carol) == []
    solo = services.create_game(creator=carol, opponent=carol)
    assert solo.marks_for(carol) == ["X", "O"]
