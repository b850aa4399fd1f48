"""tests/bench/seed.py: the benchmark's data passes every invariant."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count, Max, Q

from games import services
from games.integrity import all_violations, record_violations
from games.models import Game, GameStatus, Move, Series
from tests.bench.run import move_games
from tests.bench.seed import Command


@pytest.fixture
def seeded(db, tmp_path):
    manifest = tmp_path / "manifest.json"
    call_command(
        Command(),
        scenario="small",
        password="a-long-bench-password",
        move_games=5,
        manifest=str(manifest),
    )
    return manifest


def test_seeded_games_replay_to_their_rows(seeded):
    assert list(all_violations()) == []
    assert list(record_violations()) == []  # the player records match too
    assert Game.objects.count() == 10 + 5
    assert Game.objects.filter(status=GameStatus.WAITING).count() == 1
    assert Move.objects.count() == sum(
        Game.objects.values_list("move_count", flat=True)
    )


def test_series_counters_match_the_finished_games(seeded):
    for series in Series.objects.annotate(
        finished=Count("games", filter=~Q(games__status=GameStatus.IN_PROGRESS))
    ):
        assert series.a_wins + series.b_wins + series.draws == series.finished


def test_the_manifest_names_a_playable_game_and_the_move_pool(seeded):
    manifest = json.loads(seeded.read_text())
    page = Game.objects.get(pk=manifest["page_game"])
    assert (page.player_x.username, page.status, page.move_count) == (
        "bench",
        GameStatus.IN_PROGRESS,
        2,
    )
    pool = Game.objects.filter(pk__in=manifest["move_games"])
    assert {(g.player_x.username, g.player_o.username, g.move_count) for g in pool} == {
        ("bench-mover", "bench-mover", 0)
    }


# Sequences restart at 1, as on the empty database the seeder fills: otherwise an
# earlier test's ids would hide a seeder that leaves them behind its own.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_games_created_after_seeding_get_fresh_ids(seeded):
    mover = get_user_model().objects.get(username="bench-mover")
    game = services.create_game(creator=mover, opponent=mover)
    assert game.pk == Game.objects.aggregate(Max("pk"))["pk__max"] == 10 + 5 + 1


def test_refuses_a_database_that_has_data(seeded):
    with pytest.raises(CommandError, match="only fills an empty database"):
        call_command(Command(), scenario="small", password="another-password")


def test_the_bench_gives_each_use_games_of_its_own():
    """tests/bench/run.py: the app's, the floor's and the textbook move's POSTs,
    the live benchmark and the query counts never share a game."""
    seeded = list(range(1, 9053))
    uses = move_games({"scenario": "small", "move_games": seeded})

    assert {use: len(games) for use, games in uses.items()} == {
        "move POST": 3000,
        "floor move": 3000,
        "textbook move": 3000,
        "live": 50,
        "app count": 1,
        "floor count": 1,
    }
    assert sorted(game for games in uses.values() for game in games) == seeded
    large = move_games({"scenario": "large", "move_games": list(range(1, 3053))})
    assert list(large) == ["move POST", "live", "app count", "floor count"]
