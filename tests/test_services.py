"""games.services: every action, every rejection, and the signals sent."""

import logging
import re
from contextlib import contextmanager
from functools import partial
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import F
from django.test import override_settings

from games import exceptions, records, rules, services, signals
from games.models import Game, Move, PlayerRecord, PlayerResult, Series
from games.results import COUNTERS

from .conftest import X_WINS_ROW_0, new_game, snapshot_tables


@pytest.fixture
def received():
    """Every game signal sent while the test runs, as (signal name, kwargs)."""
    log = []
    sent = {
        "game_created": signals.game_created,
        "game_joined": signals.game_joined,
        "move_made": signals.move_made,
        "game_ended": signals.game_ended,
    }
    receivers = {}
    for name, signal in sent.items():

        def receiver(sender, _name=name, **kwargs):
            kwargs.pop("signal")
            log.append((_name, {"sender": sender} | kwargs))

        receivers[name] = receiver
        signal.connect(receiver, weak=False)
    yield log
    for name, signal in sent.items():
        signal.disconnect(receivers[name])


def assert_rejected(exc_type, action, message=None):
    before = snapshot_tables()
    with pytest.raises(exc_type) as excinfo:
        action()
    assert snapshot_tables() == before
    if message is not None:
        assert excinfo.value.message == message
    return excinfo.value


# -- create ---------------------------------------------------------------


def test_create_against_a_named_opponent(alice, bob):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    assert (game.player_x, game.player_o) == (bob, alice)
    assert game.status == "in_progress"
    assert game.board == "---------"
    assert game.series is not None


def test_create_open_game_waits_for_an_opponent(alice):
    game = services.create_game(creator=alice, opponent=None, side="x")
    assert (game.player_x, game.player_o) == (alice, None)
    assert game.status == "waiting"
    assert game.series is None


def test_create_random_side_picks_one(alice, bob, settings):
    settings.GAMES_MAX_UNSTARTED_PER_USER = 40
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 40
    sides = {
        services.create_game(creator=alice, opponent=bob, side="random").player_x
        for _ in range(40)
    }
    assert sides == {alice, bob}


def test_create_rejects_an_unknown_side(alice, bob):
    assert_rejected(
        exceptions.InvalidSide,
        lambda: services.create_game(creator=alice, opponent=bob, side="z"),
        "Choose a side: x, o or random.",
    )


@override_settings(GAMES_MAX_OPEN_PER_USER=2)
def test_open_games_per_user_are_limited(alice, bob):
    services.create_game(creator=alice)
    services.create_game(creator=alice, side="o")
    error = assert_rejected(
        exceptions.TooManyOpenGames, lambda: services.create_game(creator=alice)
    )
    assert "2 open games" in error.message
    # Other users and games against a named opponent are not limited.
    services.create_game(creator=bob)
    services.create_game(creator=alice, opponent=bob)


def test_a_constraint_violation_is_a_conflict_and_writes_nothing(game, alice, bob):
    """A write the database refuses (here a second rematch of one game, which
    rematch itself never attempts) rolls the whole action back."""
    services.forfeit(game_id=game.pk, user=alice)
    services.create_game(creator=alice, opponent=bob, rematch_of=game)
    assert_rejected(
        exceptions.Conflict,
        lambda: services.create_game(creator=alice, opponent=bob, rematch_of=game),
        "The game changed while your action was being saved. Please try again.",
    )


# -- join -----------------------------------------------------------------


def test_join_takes_the_free_side(alice, bob):
    open_game = services.create_game(creator=alice, side="o")
    game = services.join_game(game_id=open_game.pk, user=bob)
    assert (game.player_x, game.player_o) == (bob, alice)
    assert game.status == "in_progress"
    assert game.version == open_game.version + 1
    assert Game.objects.get(pk=game.pk).series_id is not None


def test_join_rejections(alice, bob, carol, game):
    open_game = services.create_game(creator=alice)
    assert_rejected(
        exceptions.AlreadyInGame,
        lambda: services.join_game(game_id=open_game.pk, user=alice),
        "You created this game: share its address with an opponent.",
    )
    assert_rejected(
        exceptions.GameFull,
        lambda: services.join_game(game_id=game.pk, user=carol),
        "This game already has two players.",
    )
    assert_rejected(
        exceptions.AlreadyInGame, lambda: services.join_game(game_id=game.pk, user=bob)
    )
    assert_rejected(
        exceptions.GameNotFound, lambda: services.join_game(game_id=10**6, user=bob)
    )


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
        exceptions.NotAPlayer,
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
        exceptions.GameNotStarted,
        lambda: services.play_move(game_id=open_game.pk, user=alice, row=0, col=0),
    )


def test_stale_ply_is_rejected(game, alice, bob):
    services.play_move(game_id=game.pk, user=alice, row=0, col=0, ply=0)
    assert_rejected(
        exceptions.StaleMove,
        lambda: services.play_move(game_id=game.pk, user=bob, row=1, col=1, ply=0),
    )
    # The same double-submitted move by alice is stale too, not "not your turn".
    assert_rejected(
        exceptions.StaleMove,
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
        if sql == services.MOVE_READ and remaining[0] > 0:
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
        pytest.raises(exceptions.Conflict) as refused,
    ):
        services.play_move(game_id=game.pk, user=alice, row=1, col=1, ply=0)
    assert refused.value.message == (
        "The game changed while your action was being saved. Please try again."
    )
    stored = Game.objects.get(pk=game.pk)
    assert (stored.board, stored.move_count, stored.version) == ("-" * 9, 0, 4)
    assert not Move.objects.filter(game=game).exists()


def test_the_move_reads_the_game_fields_in_model_order():
    """Game.from_db places a partial row by the model's field order: the move's
    read must select its columns in that order, or values land in the wrong field."""
    selected = re.findall(r'\bgame\."(\w+)"', services.MOVE_READ.split("FROM")[0])
    in_model_order = [
        field.attname
        for field in Game._meta.concrete_fields
        if field.attname in selected
    ]
    assert selected == in_model_order == list(services.MOVE_READ_FIELDS)
    assert len(selected) == 9  # each one a field of the model


def test_move_in_a_missing_game(alice):
    assert_rejected(
        exceptions.GameNotFound,
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


# -- forfeit --------------------------------------------------------------


def test_forfeit_on_your_turn(game, alice, bob):
    ended = services.forfeit(game_id=game.pk, user=alice)
    assert ended.status == "x_forfeits"
    assert ended.winner_mark == "O"
    assert ended.finished_at is not None

    second = services.create_game(creator=alice, opponent=bob)
    services.play_move(game_id=second.pk, user=alice, row=0, col=0)
    assert services.forfeit(game_id=second.pk, user=bob).status == "o_forfeits"


def test_forfeit_rejections(game, alice, bob, carol):
    assert_rejected(
        rules.NotYourTurn,
        lambda: services.forfeit(game_id=game.pk, user=bob),
        "You can only forfeit on your own turn.",
    )
    assert_rejected(
        exceptions.NotAPlayer, lambda: services.forfeit(game_id=game.pk, user=carol)
    )
    services.forfeit(game_id=game.pk, user=alice)
    assert_rejected(rules.GameOver, lambda: services.forfeit(game_id=game.pk, user=bob))
    open_game = services.create_game(creator=carol)
    assert_rejected(
        exceptions.GameNotStarted,
        lambda: services.forfeit(game_id=open_game.pk, user=carol),
    )


# -- rematch and series ---------------------------------------------------


def test_rematch_swaps_sides_and_keeps_history(game, alice, bob):
    services.forfeit(game_id=game.pk, user=alice)
    again = services.rematch(game_id=game.pk, user=bob)
    assert again.pk != game.pk
    assert (again.player_x, again.player_o) == (bob, alice)
    assert again.rematch_of_id == game.pk
    assert again.status == "in_progress"
    # Both players asking (or a double click) land in the same rematch.
    assert services.rematch(game_id=game.pk, user=alice).pk == again.pk
    assert Game.objects.count() == 2


def test_rematch_rejections(game, carol, alice):
    assert_rejected(
        exceptions.GameNotFinished,
        lambda: services.rematch(game_id=game.pk, user=alice),
    )
    services.forfeit(game_id=game.pk, user=alice)
    assert_rejected(
        exceptions.NotAPlayer, lambda: services.rematch(game_id=game.pk, user=carol)
    )


def test_series_counts_wins_draws_and_forfeits(alice, bob, play):
    first = services.create_game(creator=alice, opponent=bob)
    play(first, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))  # alice (X) wins
    second = services.rematch(game_id=first.pk, user=bob)  # bob is X
    services.forfeit(game_id=second.pk, user=bob)  # alice wins by forfeit
    third = services.rematch(game_id=second.pk, user=alice)  # alice is X
    play(third, (0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2))
    series = Series.objects.get()
    assert series.wins_of(alice.pk) == 2
    assert series.wins_of(bob.pk) == 0
    assert series.draws == 1
    third.refresh_from_db()
    assert third.series_score == (2, 0, 1)  # from X's (alice's) side


# -- events ---------------------------------------------------------------


def test_events_fire_once_after_commit_with_payload(
    alice, bob, received, django_capture_on_commit_callbacks, caplog
):
    caplog.set_level(logging.INFO, logger="games.signals")
    with django_capture_on_commit_callbacks(execute=False) as pending:
        game = services.create_game(creator=alice, opponent=bob)
    assert received == []  # nothing is sent before the commit
    for callback in pending:
        callback()
    assert received == [
        (
            "game_created",
            {"sender": Game, "game": game, "player_x": alice, "player_o": bob},
        )
    ]

    received.clear()
    moves = [(0, 0, alice), (1, 0, bob), (0, 1, alice), (1, 1, bob), (0, 2, alice)]
    for row, col, user in moves:
        with django_capture_on_commit_callbacks(execute=True):
            services.play_move(game_id=game.pk, user=user, row=row, col=col)
    names = [name for name, _ in received]
    assert names == ["move_made"] * 5 + ["game_ended"]
    last_move = received[4][1]
    assert (
        last_move["player"],
        last_move["mark"],
        last_move["row"],
        last_move["col"],
    ) == (
        alice,
        "X",
        0,
        2,
    )
    assert last_move["move"].sequence_number == 5
    ended = received[5][1]
    assert (ended["status"], ended["winner"]) == ("x_won", "X")
    assert f"event=game_ended game={game.pk} status=x_won winner=X" in caplog.messages
    assert f"event=move_made game={game.pk} seq=5 player=alice mark=X row=0 col=2" in (
        caplog.messages
    )


def test_draw_event_has_no_winner(
    game, play, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        play(
            game, (0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)
        )
    assert received[-1][0] == "game_ended"
    assert (received[-1][1]["status"], received[-1][1]["winner"]) == ("draw", None)


def test_rejected_action_sends_no_event(
    game, bob, received, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(rules.NotYourTurn),
    ):
        services.play_move(game_id=game.pk, user=bob, row=0, col=0)
    assert callbacks == []
    assert received == []


def test_join_and_forfeit_events(
    alice, bob, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        open_game = services.create_game(creator=alice)
        services.join_game(game_id=open_game.pk, user=bob)
        services.forfeit(game_id=open_game.pk, user=alice)
    assert [name for name, _ in received] == [
        "game_created",
        "game_joined",
        "game_ended",
    ]
    assert received[0][1]["player_o"] is None
    assert (received[1][1]["player"], received[1][1]["mark"]) == (bob, "O")
    assert (received[2][1]["status"], received[2][1]["winner"]) == ("x_forfeits", "O")


# -- abort ----------------------------------------------------------------

TOO_LATE = "Two moves have been played: finish the game or forfeit on your turn."


@pytest.mark.parametrize("moves", [0, 1])
@pytest.mark.parametrize("aborter", ["alice", "bob"])
def test_either_player_may_abort_before_both_have_moved(
    game, alice, bob, play, moves, aborter, received, django_capture_on_commit_callbacks
):
    play(game, *[(0, 0), (1, 1)][:moves])
    user = {"alice": alice, "bob": bob}[aborter]
    series_before = Series.objects.values().get(pk=game.series_id)
    with django_capture_on_commit_callbacks(execute=True):
        aborted = services.abort(game_id=game.pk, user=user)
    stored = Game.objects.get(pk=game.pk)
    assert (stored.status, stored.aborted_by, stored.move_count) == (
        "aborted",
        user,
        moves,
    )
    assert stored.finished_at is not None
    assert stored.winning_line is None
    assert stored.version == aborted.version == game.version + moves + 1
    assert received == [
        (
            "game_ended",
            {"sender": Game, "game": aborted, "status": "aborted", "winner": None},
        )
    ]
    # Listed for both players, counted nowhere.
    assert set(stored.results.values_list("player", "opponent", "mark", "outcome")) == {
        (alice.pk, bob.pk, "X", "aborted"),
        (bob.pk, alice.pk, "O", "aborted"),
    }
    assert Series.objects.values().get(pk=game.series_id) == series_before
    assert not PlayerRecord.objects.filter(player__in=[alice, bob]).exclude(
        **dict.fromkeys(COUNTERS, 0)
    )


def test_abort_is_refused_once_both_have_moved(game, alice, bob, carol, play):
    play(game, (0, 0), (1, 1))
    for user in (alice, bob):
        assert_rejected(
            rules.TooLateToAbort,
            lambda user=user: services.abort(game_id=game.pk, user=user),
            TOO_LATE,
        )
    assert_rejected(
        exceptions.NotAPlayer,
        lambda: services.abort(game_id=game.pk, user=carol),
        "You are not a player in this game.",
    )
    assert_rejected(
        exceptions.GameNotFound, lambda: services.abort(game_id=10**6, user=alice)
    )


def test_a_finished_or_aborted_game_cannot_be_aborted(game, alice, bob, play):
    services.abort(game_id=game.pk, user=alice)
    assert_rejected(
        rules.GameOver,
        lambda: services.abort(game_id=game.pk, user=bob),
        "The game is over: there is nothing left to abort.",
    )
    assert_rejected(
        rules.GameOver,
        lambda: services.play_move(game_id=game.pk, user=alice, row=0, col=0),
    )
    assert_rejected(
        rules.GameOver, lambda: services.forfeit(game_id=game.pk, user=alice)
    )


def test_third_user_cannot_abort_at_zero_moves(game, carol):
    assert_rejected(
        exceptions.NotAPlayer,
        lambda: services.abort(game_id=game.pk, user=carol),
        "You are not a player in this game.",
    )


def test_the_creator_withdraws_an_open_game(alice, bob):
    open_game = services.create_game(creator=alice, side="o")
    assert_rejected(
        exceptions.NotAPlayer, lambda: services.abort(game_id=open_game.pk, user=bob)
    )
    services.abort(game_id=open_game.pk, user=alice)
    stored = Game.objects.get(pk=open_game.pk)
    assert (stored.status, stored.player_x, stored.player_o) == ("aborted", None, alice)
    assert list(
        stored.results.values_list("player", "opponent", "mark", "outcome")
    ) == [(alice.pk, None, "O", "aborted")]
    assert_rejected(
        rules.GameOver,
        lambda: services.join_game(game_id=open_game.pk, user=bob),
        "This game was aborted: it cannot be joined.",
    )
    assert_rejected(
        exceptions.NoOpponent,
        lambda: services.rematch(game_id=open_game.pk, user=alice),
        "Nobody joined this game: start a new one from the lobby.",
    )


def test_self_play_aborts_under_the_same_rule(alice, play):
    solo = services.create_game(creator=alice, opponent=alice)
    play(solo, (0, 0))
    services.abort(game_id=solo.pk, user=alice)
    stored = Game.objects.get(pk=solo.pk)
    assert stored.status == "aborted"
    assert list(
        stored.results.values_list("player", "opponent", "mark", "outcome")
    ) == [(alice.pk, alice.pk, "", "aborted")]
    late = services.create_game(creator=alice, opponent=alice)
    play(late, (0, 0), (1, 1))
    assert_rejected(
        rules.TooLateToAbort,
        lambda: services.abort(game_id=late.pk, user=alice),
        TOO_LATE,
    )


def test_a_rematch_follows_an_abort_with_sides_swapped(game, alice, bob):
    services.abort(game_id=game.pk, user=bob)
    new = services.rematch(game_id=game.pk, user=alice)
    assert (new.player_x, new.player_o, new.created_by) == (bob, alice, alice)
    assert new.rematch_of_id == game.pk
    assert services.rematch(game_id=game.pk, user=bob) == new


def test_aborts_leave_records_series_and_streaks_alone(alice, bob, play):
    won = services.create_game(creator=alice, opponent=bob)
    play(won, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    before = (
        list(PlayerRecord.objects.order_by("pk").values()),
        list(Series.objects.order_by("pk").values()),
        PlayerResult.objects.streak(alice),
        Series.objects.head_to_head(alice),
    )
    for creator, opponent in ((alice, bob), (bob, alice)):
        aborted = services.create_game(creator=creator, opponent=opponent)
        services.abort(game_id=aborted.pk, user=opponent)
    after = (
        list(PlayerRecord.objects.order_by("pk").values()),
        list(Series.objects.order_by("pk").values()),
        PlayerResult.objects.streak(alice),
        Series.objects.head_to_head(alice),
    )
    assert after == before
    assert before[2] == records.Streak("win", 1)
    assert before[3] == [(bob, 1, 0, 0)]
    # Deleting games recounts from the rows: aborted rows still count nowhere.
    services.delete_games(game_ids=[won.pk])
    assert PlayerRecord.objects.get(player=alice).x_wins == 0
    assert Series.objects.get().a_wins + Series.objects.get().b_wins == 0


# -- challenge limits ----------------------------------------------------


@override_settings(GAMES_MAX_UNSTARTED_PER_OPPONENT=2, GAMES_MAX_UNSTARTED_PER_USER=3)
def test_unanswered_games_against_one_opponent_are_limited(alice, bob, carol, play):
    first = services.create_game(creator=alice, opponent=bob, side="x")
    play(first, (0, 0))  # alice moved; bob has not: still unanswered
    services.create_game(creator=alice, opponent=bob, side="o")
    assert_rejected(
        exceptions.TooManyUnstartedGames,
        lambda: services.create_game(creator=alice, opponent=bob),
        "You already have 2 games against bob in which they have not moved yet. "
        "Wait for them to move, or abort one of those games.",
    )
    # bob may still challenge alice, and alice someone else.
    services.create_game(creator=bob, opponent=alice)
    services.create_game(creator=alice, opponent=carol)
    # Once bob moves in one of them, it no longer counts.
    play(first, (1, 1))
    services.create_game(creator=alice, opponent=bob)


@override_settings(GAMES_MAX_UNSTARTED_PER_OPPONENT=5, GAMES_MAX_UNSTARTED_PER_USER=2)
def test_unanswered_games_in_all_are_limited(alice, bob, carol, make_user):
    services.create_game(creator=alice, opponent=bob)
    aborted = services.create_game(creator=alice, opponent=carol)
    dave = make_user("dave")
    assert_rejected(
        exceptions.TooManyUnstartedGames,
        lambda: services.create_game(creator=alice, opponent=dave),
        "You already have 2 games in which your opponent has not moved yet. "
        "Wait for them to move, or abort one of those games.",
    )
    # Self-play, open games and games others started are not limited by it.
    for _ in range(3):
        services.create_game(creator=alice, opponent=alice)
    services.create_game(creator=alice)
    services.create_game(creator=dave, opponent=alice)
    # An aborted game no longer counts.
    services.abort(game_id=aborted.pk, user=carol)
    services.create_game(creator=alice, opponent=dave)


def test_the_limits_default_to_ten_and_three():
    from tictactoe_site import settings as project_settings

    assert project_settings.GAMES_MAX_UNSTARTED_PER_USER == 10
    assert project_settings.GAMES_MAX_UNSTARTED_PER_OPPONENT == 3


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
        partial(services.close_account, user=bob)
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
        services.close_account(user=bob)
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
