"""`manage.py check_games`: replays stored games and reports broken invariants."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from games import integrity, services
from games.models import Game, Move, PlayerRecord, PlayerResult


@pytest.fixture
def some_games(game, play, alice, bob, carol):
    play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    services.create_game(creator=carol)
    solo = services.create_game(creator=carol, opponent=carol)
    play(solo, (1, 1))
    services.forfeit(
        game_id=services.create_game(creator=bob, opponent=alice).pk, user=bob
    )
    return game


def test_consistent_games_pass(some_games, capsys):
    call_command("check_games")
    assert "4 game(s) checked: all consistent." in capsys.readouterr().out


def test_a_missing_move_is_reported(some_games, capsys):
    Move.objects.filter(game=some_games, sequence_number=3).delete()
    with pytest.raises(CommandError, match=r"problem\(s\) found in 4 game\(s\)"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert f"game {some_games.pk}: move sequence numbers are [1, 2, 4, 5]" in out


def test_a_board_that_disagrees_with_its_moves_is_reported(some_games, capsys):
    # A legal-looking row (passes the constraints) that its moves do not produce.
    Game.objects.filter(pk=some_games.pk).update(board="XXX-OO---", move_order="01245")
    with pytest.raises(CommandError):
        call_command("check_games")
    out = capsys.readouterr().out
    assert "board 'XXX-OO---' but the moves give 'XXXOO----'" in out


def test_a_missing_result_row_is_reported(some_games, alice, capsys):
    PlayerResult.objects.filter(game=some_games, player=alice).delete()
    with pytest.raises(CommandError):
        call_command("check_games")
    out = capsys.readouterr().out
    assert f"game {some_games.pk}: player results [" in out
    assert "but the game gives [" in out


def test_a_result_that_contradicts_the_game_is_reported(some_games, alice, capsys):
    PlayerResult.objects.filter(game=some_games, player=alice).update(outcome="draw")
    # The result row, and the record's x_wins and x_draws that no longer match it.
    with pytest.raises(CommandError, match=r"3 problem\(s\) found"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert "'draw'" in out
    assert f"player {alice.pk}: record x_wins is 1 but the results give 0" in out
    assert f"player {alice.pk}: record x_draws is 0 but the results give 1" in out


def test_a_record_counter_that_drifted_is_reported(some_games, alice, capsys):
    PlayerRecord.objects.filter(player=alice).update(x_wins=5)
    with pytest.raises(CommandError, match=r"1 problem\(s\) found"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert f"player {alice.pk}: record x_wins is 5 but the results give 1" in out


def test_a_missing_record_is_reported(some_games, bob, capsys):
    PlayerRecord.objects.filter(player=bob).delete()
    with pytest.raises(CommandError, match=r"2 problem\(s\) found"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert f"player {bob.pk}: record o_losses is 0 but the results give 1" in out
    assert f"player {bob.pk}: record x_forfeits is 0 but the results give 1" in out


@pytest.fixture
def aborted_games(game, play, alice, bob, carol):
    services.abort(game_id=game.pk, user=bob)  # no moves
    one_move = play(services.create_game(creator=bob, opponent=alice), (1, 1))
    services.abort(game_id=one_move.pk, user=bob)
    services.abort(game_id=services.create_game(creator=carol).pk, user=carol)
    solo = play(services.create_game(creator=carol, opponent=carol), (0, 0))
    services.abort(game_id=solo.pk, user=carol)
    return one_move


def test_aborted_games_pass(aborted_games, capsys):
    call_command("check_games")
    assert "4 game(s) checked: all consistent." in capsys.readouterr().out


def test_an_aborted_game_counted_as_a_result_is_reported(aborted_games, bob, capsys):
    PlayerResult.objects.filter(game=aborted_games, player=bob).update(outcome="win")
    with pytest.raises(CommandError, match=r"2 problem\(s\) found"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert f"game {aborted_games.pk}: player results [" in out
    assert f"player {bob.pk}: record x_wins is 0 but the results give 1" in out


def test_an_aborted_game_with_two_moves_is_reported(alice, bob, carol):
    """The database refuses such a row (game_aborted_early); check_games finds
    it on its own all the same."""
    game = Game(
        pk=1,
        player_x=alice,
        player_o=bob,
        status="aborted",
        board="X---O----",
        move_count=2,
        move_order="04",
        aborted_by=bob,
        finished_at=timezone.now(),
    )
    moves = [(1, 0, 0, "X"), (2, 1, 1, "O")]
    assert integrity.game_violations(game, moves) == ["aborted after 2 moves"]
    game.aborted_by = carol
    assert integrity.game_violations(game, moves) == [
        "aborted after 2 moves",
        "aborted by someone who is not a player",
    ]


def test_a_game_waiting_on_an_inactive_player_is_reported(
    game, play, alice, bob, carol, capsys
):
    """Closing or deactivating an account settles its games, so the product cannot
    reach this: bob's account is switched off in the row itself, around it."""
    play(game, (0, 0), (1, 1), (2, 2))  # bob (O) to move
    carol_to_move = services.create_game(creator=carol, opponent=bob)
    play(carol_to_move, (0, 0), (1, 1))  # not reported: bob is not to move
    get_user_model().objects.filter(pk=bob.pk).update(is_active=False)
    with pytest.raises(CommandError, match=r"1 problem\(s\) found in 2 game\(s\)"):
        call_command("check_games")
    out = capsys.readouterr().out
    assert (
        f"game {game.pk}: in progress with O to move, but that player (bob) is "
        "inactive: the game can never end"
    ) in out
