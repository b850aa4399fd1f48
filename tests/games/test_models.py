"""Database constraints: the database itself refuses an impossible game or move."""

import pytest
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from games import services
from games.models import Game, Move, Series
from games.queries import turn_of


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
    move = Move(game_id=game.pk, sequence_number=1, player="X", row=0, col=2)
    assert str(move) == f"Move 1 of game {game.pk}: X at (0, 2)"


def test_marks_for_each_kind_of_viewer(game, alice, bob, carol):
    assert game.marks_for(alice) == ["X"]
    assert game.marks_for(bob) == ["O"]
    assert game.marks_for(carol) == []
    solo = services.create_game(creator=carol, opponent=carol)
    assert solo.marks_for(carol) == ["X", "O"]


# -- aborted games ------------------------------------------------------------


def test_aborted_game_constraints(started, game, alice, bob, carol, play):
    now = timezone.now()
    aborted = {"status": "aborted", "finished_at": now}
    assert rejected_by_database(_update(started, **aborted))  # nobody aborted it
    assert rejected_by_database(_update(started, **aborted, aborted_by=carol))
    assert rejected_by_database(_update(started, aborted_by=alice))  # still running
    assert rejected_by_database(_update(started, created_by=carol))
    assert not rejected_by_database(_update(started, **aborted, aborted_by=bob))
    two_moves = play(services.create_game(creator=alice, opponent=bob), (0, 0), (1, 1))
    assert rejected_by_database(_update(two_moves, **aborted, aborted_by=alice))
    withdrawn = services.abort(
        game_id=services.create_game(creator=alice, side="o").pk, user=alice
    )
    assert rejected_by_database(_update(withdrawn, aborted_by=bob))
    # An open game withdrawn has one player and no moves.
    assert rejected_by_database(
        _update(withdrawn, board="X--------", move_count=1, move_order="0")
    )


# -- queries that apply a rule --------------------------------------------------


@pytest.fixture
def games_at_every_move_count(alice, bob, carol, settings):
    """Games between alice, bob and carol (and alice alone), each side started
    by either, at every move count from 0 to 8."""
    settings.GAMES_MAX_UNSTARTED_PER_USER = 100
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 100
    order = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]
    games = []
    for creator, opponent in (
        (alice, bob),
        (bob, alice),
        (carol, alice),
        (alice, alice),
    ):
        for side in ("x", "o"):
            for count in range(9):
                game = services.create_game(
                    creator=creator, opponent=opponent, side=side
                )
                for row, col in order[:count]:
                    game.refresh_from_db()
                    mover = game.player_for(game.next_mark)
                    services.play_move(game_id=game.pk, user=mover, row=row, col=col)
                game.refresh_from_db()
                games.append(game)
    return games


def test_my_turn_sql_matches_the_turn_rule(games_at_every_move_count, alice, bob):
    for user in (alice, bob):
        by_rule = {
            game.pk for game in games_at_every_move_count if game.is_turn_of(user)
        }
        by_sql = set(Game.objects.filter(turn_of(user)).values_list("pk", flat=True))
        lobby = {game.pk for game in Game.objects.for_lobby(user) if game.my_turn}
        assert by_sql == by_rule == lobby
        assert by_rule  # the check compares something


def test_new_games_are_those_someone_else_started_before_you_moved(
    games_at_every_move_count, alice
):
    def unmoved(game):
        return not any(mark in game.board for mark in game.marks_for(alice))

    expected = {
        game.pk
        for game in games_at_every_move_count
        if game.is_player(alice) and game.created_by_id != alice.pk and unmoved(game)
    }
    new = {game.pk for game in Game.objects.for_lobby(alice) if game.is_new}
    assert new == expected
    # bob and carol each: alice as O at 0 and 1 moves, alice as X at 0 moves.
    assert len(expected) == 6
