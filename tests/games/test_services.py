"""games.services: every action, every rejection, and the signals sent."""

import logging

import pytest
from django.test import override_settings

from games import player_stats, refusals, rules, services, signals
from games.models import Game, PlayerRecord, PlayerResult, Series
from games.result_rows import COUNTERS

from ..conftest import snapshot_tables


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
        refusals.InvalidSide,
        lambda: services.create_game(creator=alice, opponent=bob, side="z"),
        "Choose a side: X, O or random.",
    )


@override_settings(GAMES_MAX_OPEN_PER_USER=2)
def test_open_games_per_user_are_limited(alice, bob):
    services.create_game(creator=alice)
    services.create_game(creator=alice, side="o")
    error = assert_rejected(
        refusals.TooManyOpenGames, lambda: services.create_game(creator=alice)
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
        refusals.Conflict,
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
        refusals.AlreadyInGame,
        lambda: services.join_game(game_id=open_game.pk, user=alice),
        "You created this game: share its address with an opponent.",
    )
    assert_rejected(
        refusals.GameFull,
        lambda: services.join_game(game_id=game.pk, user=carol),
        "This game already has two players.",
    )
    assert_rejected(
        refusals.AlreadyInGame, lambda: services.join_game(game_id=game.pk, user=bob)
    )
    assert_rejected(
        refusals.GameNotFound, lambda: services.join_game(game_id=10**6, user=bob)
    )


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
        refusals.NotAPlayer, lambda: services.forfeit(game_id=game.pk, user=carol)
    )
    services.forfeit(game_id=game.pk, user=alice)
    assert_rejected(rules.GameOver, lambda: services.forfeit(game_id=game.pk, user=bob))
    open_game = services.create_game(creator=carol)
    assert_rejected(
        refusals.GameNotStarted,
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
        refusals.GameNotFinished,
        lambda: services.rematch(game_id=game.pk, user=alice),
    )
    services.forfeit(game_id=game.pk, user=alice)
    assert_rejected(
        refusals.NotAPlayer, lambda: services.rematch(game_id=game.pk, user=carol)
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
    move_line = (
        f"event=move_made game={game.pk} seq=5 player={alice.pk} mark=X row=0 col=2"
    )
    assert move_line in caplog.messages


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
        refusals.NotAPlayer,
        lambda: services.abort(game_id=game.pk, user=carol),
        "You are not a player in this game.",
    )
    assert_rejected(
        refusals.GameNotFound, lambda: services.abort(game_id=10**6, user=alice)
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
        refusals.NotAPlayer,
        lambda: services.abort(game_id=game.pk, user=carol),
        "You are not a player in this game.",
    )


def test_the_creator_withdraws_an_open_game(alice, bob):
    open_game = services.create_game(creator=alice, side="o")
    assert_rejected(
        refusals.NotAPlayer, lambda: services.abort(game_id=open_game.pk, user=bob)
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
        refusals.NoOpponent,
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
    assert before[2] == player_stats.Streak("win", 1)
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
        refusals.TooManyUnstartedGames,
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
        refusals.TooManyUnstartedGames,
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
