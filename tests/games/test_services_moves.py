"""games.services: moves, and a move whose game changes between its read and
its write (a second tab, a forfeit, a player who leaves)."""

from contextlib import contextmanager
from functools import partial
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import F

from accounts import services as account_services
from games import refusals, rules, services
from games.models import Game, Move
from games.sql import MOVE_READ

from ..conftest import X_WINS_ROW_0, new_game
from .test_services import assert_rejected

# -- moves ----------------------------------------------------------------


def test_a_move_writes_the_move_and_the_game_together(game, alice):
    game = services.play_move(game_id=game.pk, user=alice, row=1, col=2, ply=0)
    stored = Game.objects.get(pk=game.pk)
    assert stored.board == "-----X---"
    assert stored.move_count == 1
    assert stored.move_order == "5"
    assert stored.version == 2
    move = Move.objects.get(game=game)
    assert (move.sequence_number, move.row, move.col, move.player) == (1, 1, 2, "X")


@pytest.mark.parametrize(("row", "col"), [(-1, 0), (3, 0), (0, 3), (0, -1), (10**9, 0)])
def test_move_outside_the_board(game, alice, row, col):
    assert_rejected(
        rules.OutsideBoard,
        lambda: services.play_move(game_id=game.pk, user=alice, row=row, col=col),
    )


def test_move_on_an_occupied_cell(game, alice, bob):
    services.play_move(game_id=game.pk, user=alice, row=0, col=0)
    assert_rejected(
        rules.CellOccupied,
        lambda: services.play_move(game_id=game.pk, user=bob, row=0, col=0),
        "That cell is already taken.",
    )


def test_move_out_of_turn(game, bob):
    assert_rejected(
        rules.NotYourTurn,
        lambda: services.play_move(game_id=game.pk, user=bob, row=0, col=0),
        "It is not your turn.",
    )


def test_move_by_someone_not_in_the_game(game, carol):
    assert_rejected(
        refusals.NotAPlayer,
        lambda: services.play_move(game_id=game.pk, user=carol, row=0, col=0),
        "You are not a player in this game.",
    )


def test_move_after_the_game_is_over(game, play, bob):
    won = play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    assert won.status == "x_won"
    assert_rejected(
        rules.GameOver,
        lambda: services.play_move(game_id=game.pk, user=bob, row=2, col=2),
    )


def test_move_in_a_game_waiting_for_an_opponent(alice):
    open_game = services.create_game(creator=alice)
    assert_rejected(
        refusals.GameNotStarted,
        lambda: services.play_move(game_id=open_game.pk, user=alice, row=0, col=0),
    )


def test_stale_ply_is_rejected(game, alice, bob):
    services.play_move(game_id=game.pk, user=alice, row=0, col=0, ply=0)
    assert_rejected(
        refusals.StaleMove,
        lambda: services.play_move(game_id=game.pk, user=bob, row=1, col=1, ply=0),
    )
    # The same double-submitted move by alice is stale too, not "not your turn".
    assert_rejected(
        refusals.StaleMove,
        lambda: services.play_move(game_id=game.pk, user=alice, row=0, col=1, ply=0),
    )
    services.play_move(game_id=game.pk, user=bob, row=1, col=1, ply=1)


# -- a move whose game changes between its read and its write -----------------


@contextmanager
def meanwhile(change, *, times: int = 1):
    """Run `change` right after a move has read its game and before it writes:
    what another request (a second tab, the opponent) may do in between."""
    remaining = [times]

    def after_the_read(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql == MOVE_READ and remaining[0] > 0:
            remaining[0] -= 1
            change()
        return result

    with connection.execute_wrapper(after_the_read):
        yield


def test_a_move_on_a_board_that_changed_meanwhile_is_decided_again(game, alice):
    """A second tab's move lands between the read and the write: the move is
    decided again on the new board, where it is no longer alice's turn."""
    second_tab = partial(
        services.play_move, game_id=game.pk, user=alice, row=0, col=0, ply=None
    )
    with meanwhile(second_tab), pytest.raises(rules.NotYourTurn) as refused:
        services.play_move(game_id=game.pk, user=alice, row=1, col=1)
    assert refused.value.message == "It is not your turn."
    stored = Game.objects.get(pk=game.pk)
    assert (stored.board, stored.move_count, stored.version) == ("X--------", 1, 2)
    assert list(Move.objects.filter(game=game).values_list("row", "col")) == [(0, 0)]


def test_a_move_after_a_forfeit_meanwhile_is_refused(game, alice):
    forfeit = partial(services.forfeit, game_id=game.pk, user=alice)
    with meanwhile(forfeit), pytest.raises(rules.GameOver) as refused:
        services.play_move(game_id=game.pk, user=alice, row=1, col=1, ply=0)
    assert refused.value.message == "The game is over: no more moves can be made."
    stored = Game.objects.get(pk=game.pk)
    assert (stored.status, stored.board, stored.version) == ("x_forfeits", "-" * 9, 2)
    assert not Move.objects.filter(game=game).exists()


def _someone_else_writes(game):
    # Another writer's change, as the version check sees it.
    return lambda: Game.objects.filter(pk=game.pk).update(version=F("version") + 1)


def test_a_move_tries_again_while_the_game_changes_under_it(game, alice):
    with meanwhile(_someone_else_writes(game), times=2):
        services.play_move(game_id=game.pk, user=alice, row=1, col=1, ply=0)
    stored = Game.objects.get(pk=game.pk)
    # 1, +2 by the other writer, +1 by the move on its third attempt
    assert (stored.board, stored.move_count, stored.version) == ("----X----", 1, 4)
    assert Move.objects.filter(game=game).count() == 1


def test_a_move_gives_up_on_a_game_that_keeps_changing(game, alice):
    with (
        meanwhile(_someone_else_writes(game), times=3),
        pytest.raises(refusals.Conflict) as refused,
    ):
        services.play_move(game_id=game.pk, user=alice, row=1, col=1, ply=0)
    assert refused.value.message == (
        "The game changed while your action was being saved. Please try again."
    )
    stored = Game.objects.get(pk=game.pk)
    assert (stored.board, stored.move_count, stored.version) == ("-" * 9, 0, 4)
    assert not Move.objects.filter(game=game).exists()


def test_move_in_a_missing_game(alice):
    assert_rejected(
        refusals.GameNotFound,
        lambda: services.play_move(game_id=987654, user=alice, row=0, col=0),
    )


def test_win_draw_and_ninth_move_win(game, play, alice, bob):
    won = play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    assert (won.status, won.winning_line, won.winner_mark) == ("x_won", 0, "X")
    assert won.finished_at is not None

    draw_game = services.create_game(creator=alice, opponent=bob)
    draw = play(
        draw_game,
        (0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2),
    )  # fmt: skip
    assert (draw.status, draw.winning_line, draw.board) == ("draw", None, "XOXXOOOXX")

    ninth = play(
        services.create_game(creator=alice, opponent=bob),
        (1, 2), (2, 0), (2, 1), (1, 1), (1, 0), (0, 0), (2, 2), (0, 1), (0, 2),
    )  # fmt: skip
    assert (ninth.status, ninth.move_count) == ("x_won", 9)


def test_self_play_moves_both_sides(alice):
    game = services.create_game(creator=alice, opponent=alice)
    services.play_move(game_id=game.pk, user=alice, row=0, col=0)
    game = services.play_move(game_id=game.pk, user=alice, row=1, col=1)
    assert game.board == "X---O----"


# -- a player who leaves while a move is being decided -------------------------
# Closing or deactivating an account changes the version of each unfinished game
# of that player: a move decided while they could still play is decided again.


def _bobs_turn_next(game, play):
    """alice (X) and bob (O) have moved: it is alice's turn, too late to abort."""
    return play(game, (0, 0), (1, 1))


def _admin_deactivates(client, user):
    """Staff untick "Active" on the user's change form (the stock user admin)."""

    def deactivate():
        response = client.post(
            f"/admin/auth/user/{user.pk}/change/",
            {
                "username": user.get_username(),
                "email": "",
                "date_joined_0": "2026-01-01",
                "date_joined_1": "00:00:00",
            },
        )
        assert response.status_code == 302

    return deactivate


@pytest.fixture
def staff_client(client_for, make_user):
    return client_for(make_user("root", is_staff=True, is_superuser=True))


@pytest.mark.parametrize("how", ["closing", "the admin"])
def test_a_move_decided_before_the_opponent_left_is_decided_again(
    game, play, alice, bob, staff_client, how
):
    """alice's move read "bob open"; bob leaves before it is written (too late to
    abort, not his turn: the game stays). The move is decided again and bob, whose
    turn it now is, forfeits: alice is never left waiting for a move that cannot
    come."""
    _bobs_turn_next(game, play)
    leave = (
        partial(account_services.close_account, user=bob)
        if how == "closing"
        else _admin_deactivates(staff_client, bob)
    )
    with meanwhile(leave):
        services.play_move(game_id=game.pk, user=alice, row=2, col=2, ply=2)
    stored = Game.objects.get(pk=game.pk)
    assert (stored.status, stored.board, stored.move_count) == (
        "o_forfeits",
        "X---O---X",
        3,
    )
    assert stored.finished_at is not None
    assert list(Move.objects.filter(game=game).values_list("row", "col")) == [
        (0, 0),
        (1, 1),
        (2, 2),
    ]
    bob.refresh_from_db()
    assert not bob.is_active


@pytest.mark.parametrize("how", ["closing", "the admin"])
def test_leaving_changes_the_version_of_every_unfinished_game(
    alice, bob, carol, play, staff_client, how
):
    """Aborted, forfeited or left in place: each unfinished game of bob's gets a
    new version; finished games and games without him keep theirs."""
    stays = _bobs_turn_next(new_game(alice, bob), play)
    forfeited = play(new_game(alice, bob), (0, 0), (1, 1), (2, 2))  # bob (O) next
    aborted = new_game(bob, alice)
    waiting = services.create_game(creator=bob)
    finished = play(new_game(alice, bob), *X_WINS_ROW_0)
    others = new_game(alice, carol)
    before = dict(Game.objects.values_list("pk", "version"))
    if how == "closing":
        account_services.close_account(user=bob)
    else:
        _admin_deactivates(staff_client, bob)()
    after = {game.pk: game for game in Game.objects.all()}
    changed = {pk for pk in before if after[pk].version > before[pk]}
    assert changed == {stays.pk, forfeited.pk, aborted.pk, waiting.pk}
    assert after[stays.pk].status == "in_progress"
    assert after[forfeited.pk].status == "o_forfeits"
    assert (after[aborted.pk].status, after[aborted.pk].aborted_by_id) == (
        "aborted",
        bob.pk,
    )
    assert after[waiting.pk].status == "aborted"
    assert after[finished.pk].version == before[finished.pk]
    assert after[others.pk].version == before[others.pk]
    call_command("check_games", stdout=StringIO())


def test_a_deactivation_saved_anywhere_settles_the_games(alice, bob, play):
    """`bob.is_active = False; bob.save()` in a shell settles his games as
    closing does (games.receivers); saving him again changes nothing more."""
    stays = _bobs_turn_next(new_game(alice, bob), play)
    aborted = new_game(bob, alice)
    bob.is_active = False
    bob.save()
    assert Game.objects.get(pk=aborted.pk).status == "aborted"
    stays.refresh_from_db()
    assert (stays.status, stays.version) == ("in_progress", 4)
    games = list(Game.objects.order_by("pk").values())
    bob.save()
    bob.is_active = True
    bob.save()
    assert list(Game.objects.order_by("pk").values()) == games
    bob.refresh_from_db()
    assert bob.is_active  # staff may open the account again; nothing is undone
