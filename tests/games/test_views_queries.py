"""What a page costs in queries: the same with many games present, and
indexed where the planner could scan."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from games import services
from games.models import Game

from .test_views_game import text


def _many_games(alice, bob, count, settings):
    settings.GAMES_MAX_UNSTARTED_PER_USER = (
        settings.GAMES_MAX_UNSTARTED_PER_OPPONENT
    ) = (
        count + 2  # and the test's own game
    )
    for _ in range(count):
        game = services.create_game(creator=alice, opponent=bob)
        services.play_move(game_id=game.pk, user=alice, row=0, col=0)
        services.create_game(creator=bob)
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )


@pytest.mark.parametrize("extra_games", [0, 30])
def test_game_page_queries_do_not_grow(
    as_bob, game, alice, bob, play, django_assert_num_queries, extra_games, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    _many_games(alice, bob, extra_games, settings)
    play(game, (0, 0), (1, 1), (0, 1), (2, 2))  # in progress
    # user, game (players and series joined); the session comes from its cache
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/state.json").status_code == 200
    play(game, (0, 2))  # now a long, finished game
    # rendered: user, game, and the finished game's rematch (none yet), which
    # the page offers to start; from the page cache: user, game
    with django_assert_num_queries(3):
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/state.json").status_code == 200


def test_a_cached_finished_game_page_shows_its_new_rematch(
    as_bob, game, alice, play, django_assert_num_queries
):
    """The page cache's key does not read the rematch: starting one moves the
    finished game's version, so the cached page is not served again."""
    finished = play(game, (0, 0), (1, 1), (0, 1), (2, 2), (0, 2))
    for _ in range(2):  # rendered, then cached
        assert "Rematch" in text(as_bob.get(f"/games/{finished.pk}/"))
    rematch = services.rematch(game_id=finished.pk, user=alice)
    with django_assert_num_queries(3):  # user, game, its rematch: rendered anew
        response = as_bob.get(f"/games/{finished.pk}/")
    assert response.status_code == 200
    assert f"Go to the rematch (game {rematch.pk})" in text(response)


@pytest.mark.parametrize("extra_games", [0, 30])
def test_lobby_queries_do_not_grow(
    as_alice, alice, bob, django_assert_num_queries, extra_games, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    _many_games(alice, bob, extra_games, settings)
    # user, the lobby's version; rendered: your, open, finished games
    with django_assert_num_queries(5):
        assert as_alice.get("/").status_code == 200
    # user, the version: the rest from the page cache (the session: its own)
    with django_assert_num_queries(2):
        assert as_alice.get("/").status_code == 200


@pytest.mark.sqlite_only  # a SQLite planner statistics case
def test_game_page_query_uses_an_index_after_analyze(as_bob, alice, bob):
    """With statistics that say the unique index on rematch_of is nearly all
    NULLs, SQLite scanned every game when the page joined the rematch: 20 ms a
    page at 100,000 games. The page now looks the rematch up on its own, and that
    equality the unique index answers whatever the statistics say."""
    for _ in range(3):
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        # What ANALYZE says of 100,000 games without a rematch (bench's large
        # scenario): every rematch_of is NULL, so that index looks useless.
        cursor.execute(
            "UPDATE sqlite_stat1 SET stat = '100000 100000' "
            "WHERE tbl = 'games_game' AND idx LIKE 'sqlite_autoindex_games_game_%'"
        )
        cursor.execute("ANALYZE sqlite_schema")  # reload the statistics
    game = Game.objects.first()
    with CaptureQueriesContext(connection) as queries:
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    # The ORM quotes the table's name; games.sql writes it plain.
    games_sql = [
        q["sql"] for q in queries if re.search(r'FROM "?games_game\b', q["sql"])
    ]
    assert len(games_sql) == 2  # the finished game, then its rematch
    for sql in games_sql:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plan = " | ".join(str(row) for row in cursor.fetchall())
        # No scan of the games table, for the game or for its rematch (tiny
        # tables such as this test's one series row may be scanned: cheaper).
        assert "SCAN games_game" not in plan, plan


def test_lobby_with_new_games_stays_at_five_queries_then_two(
    as_alice, alice, bob, carol, make_user, django_assert_num_queries, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    for index in range(25):
        opponent = make_user(f"p{index}")
        services.create_game(creator=opponent, opponent=alice)  # new for alice
        services.create_game(creator=opponent)  # open
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=opponent).pk,
            user=alice,
        )
        # Finished lists show aborted games too (their rows load no more).
        aborted = services.create_game(creator=opponent, opponent=alice)
        services.abort(game_id=aborted.pk, user=alice)
    services.abort(game_id=services.create_game(creator=alice).pk, user=alice)
    # user, the lobby's version; rendered: your, open, finished games
    with django_assert_num_queries(5):
        response = as_alice.get("/")
    assert response.status_code == 200
    assert text(response).count("started a game against you.</span>") == 20
    assert text(response).count("Aborted by you.") == 11  # the open game, 10 others
    with django_assert_num_queries(5):  # the lists alone: a cache entry of their own
        assert as_alice.get("/lobby/live/").status_code == 200
    for path in ("/", "/lobby/live/"):
        with django_assert_num_queries(2):  # user, the version
            assert as_alice.get(path).status_code == 200
    # The archive and the player page list the same rows without more queries.
    with django_assert_num_queries(2):
        assert as_alice.get("/games/archive/").status_code == 200
