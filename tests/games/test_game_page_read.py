"""Game.objects.for_page: the game pages' read, one statement written out by
hand (games.sql.GAME_PAGE_READ), gives the game, its players and its series as
the ORM loads them: the same values, of the same types."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import services as account_services
from games import services
from games.field_lists import GAME_PAGE_FIELDS, PAGE_PLAYER_FIELDS, PAGE_SERIES_FIELDS
from games.models import Game


def read(game_id: int, viewer) -> tuple[Game, int]:
    """The page read of `game_id` for `viewer`, and the statements it took."""
    with CaptureQueriesContext(connection) as queries:
        game = Game.objects.for_page(game_id, viewer)
    return game, len(queries)


def test_the_game_its_players_and_its_series_in_one_statement(alice, bob, game, play):
    finished = play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))  # X wins
    running = services.rematch(game_id=finished.pk, user=alice)
    running = play(running, (2, 2))

    page_game, statements = read(running.pk, alice)

    assert statements == 1
    stored = Game.objects.select_related("player_x", "player_o", "series").get(
        pk=running.pk
    )
    for loaded, fields in [
        (lambda game: game, GAME_PAGE_FIELDS),
        (lambda game: game.player_x, PAGE_PLAYER_FIELDS),
        (lambda game: game.player_o, PAGE_PLAYER_FIELDS),
        (lambda game: game.series, PAGE_SERIES_FIELDS),
    ]:
        values = [getattr(loaded(page_game), name) for name in fields]
        assert values == [getattr(loaded(stored), name) for name in fields]
        # Of the same type as the ORM's: each value went through its converters.
        assert [type(value) for value in values] == [
            type(getattr(loaded(stored), name)) for name in fields
        ]
    with CaptureQueriesContext(connection) as queries:
        players = [
            (player.pk, player.get_username(), player.is_active)
            for player in (page_game.player_x, page_game.player_o)
        ]
        series = page_game.series
        score = (series.a_wins, series.b_wins, series.draws)
    assert len(queries) == 0
    # The rematch swaps the sides: bob plays X now.
    assert players == [(bob.pk, "bob", True), (alice.pk, "alice", True)]
    assert players[0][2] is True  # a bool on SQLite too
    assert series.pk == finished.series_id
    assert score == (1, 0, 0)  # alice (player a, the lower id) won the first game


def test_a_waiting_game_has_one_player_and_no_series(alice):
    waiting = services.create_game(creator=alice, opponent=None, side="o")

    page_game, statements = read(waiting.pk, alice)

    assert statements == 1
    with CaptureQueriesContext(connection) as queries:
        assert page_game.player_x is None
        assert page_game.player_o.get_username() == "alice"
        assert page_game.series is None
    assert len(queries) == 0
    assert page_game.status == "waiting"


def test_a_closed_account_reads_as_inactive(alice, bob, game):
    account_services.close_account(user=bob)

    page_game, _ = read(game.pk, alice)

    assert page_game.player_o.get_username() == "bob"
    assert page_game.player_o.is_active is False
    assert page_game.player_x.is_active is True
    assert page_game.version == Game.objects.get(pk=game.pk).version


def test_timestamps_load_when_asked_for(alice, game):
    page_game, _ = read(game.pk, alice)

    with CaptureQueriesContext(connection) as queries:
        created_at = page_game.created_at
    assert len(queries) == 1
    assert created_at == Game.objects.get(pk=game.pk).created_at
    assert created_at.tzinfo is not None


@pytest.mark.parametrize("game_id", [0, -1, 2**63, -(2**63) - 1, 10**30])
def test_no_such_game(alice, game_id):
    with pytest.raises(Game.DoesNotExist):
        Game.objects.for_page(game_id, alice)
