"""What each service publishes to the live layer (games.live.publish_on_commit):
after commit, one Change per game it changed, with the version it wrote,
whose lobbies care and whether the open games changed; nothing when the
transaction rolls back. The services know all of it: nothing is re-read."""

import pytest
from django.db import transaction

from games import live, services
from games.live import Change
from games.models import Game

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch):
    """What is published (in a test's transaction, only within
    django_capture_on_commit_callbacks: nothing else commits)."""
    sent = []
    monkeypatch.setattr(live, "publish", sent.append)
    return sent


def version(game) -> int:
    return Game.objects.get(pk=game.pk).version


def test_an_open_game_changes_every_lobby(
    published, django_capture_on_commit_callbacks, alice
):
    with django_capture_on_commit_callbacks(execute=True):
        game = services.create_game(creator=alice, side="x")
    assert published == [Change(game.pk, version(game), (alice.pk,), True)]


def test_a_challenge_changes_its_players_lobbies(
    published, django_capture_on_commit_callbacks, alice, bob
):
    with django_capture_on_commit_callbacks(execute=True):
        game = services.create_game(creator=alice, opponent=bob, side="x")
    [change] = published
    assert (change.game_id, change.version, change.open_games) == (
        game.pk,
        version(game),
        False,
    )
    assert sorted(change.player_ids) == sorted([alice.pk, bob.pk])


def test_joining_changes_the_open_games(
    published, django_capture_on_commit_callbacks, alice, bob
):
    game = services.create_game(creator=alice, side="x")
    with django_capture_on_commit_callbacks(execute=True):
        services.join_game(game_id=game.pk, user=bob)
    [change] = published
    assert (change.game_id, change.version, change.open_games) == (
        game.pk,
        version(game),
        True,
    )
    assert sorted(change.player_ids) == sorted([alice.pk, bob.pk])


def test_a_move_is_published_once_even_when_it_ends_the_game(
    published, django_capture_on_commit_callbacks, game, alice, bob
):
    for user, row, col in [(alice, 0, 0), (bob, 1, 0), (alice, 0, 1), (bob, 1, 1)]:
        services.play_move(game_id=game.pk, user=user, row=row, col=col)
    with django_capture_on_commit_callbacks(execute=True):
        services.play_move(game_id=game.pk, user=alice, row=0, col=2)  # X wins
    assert [(c.game_id, c.version, c.open_games) for c in published] == [
        (game.pk, version(game), False)
    ]


def test_a_forfeit_is_published(
    published, django_capture_on_commit_callbacks, game, alice
):
    with django_capture_on_commit_callbacks(execute=True):
        services.forfeit(game_id=game.pk, user=alice)
    assert [(c.game_id, c.version, c.open_games) for c in published] == [
        (game.pk, version(game), False)
    ]


def test_withdrawing_an_open_game_changes_the_open_games(
    published, django_capture_on_commit_callbacks, alice
):
    game = services.create_game(creator=alice, side="x")
    with django_capture_on_commit_callbacks(execute=True):
        services.abort(game_id=game.pk, user=alice)
    assert published == [Change(game.pk, version(game), (alice.pk,), True)]


def test_a_rematch_publishes_the_new_game_then_the_finished_one(
    published, django_capture_on_commit_callbacks, game, alice
):
    services.forfeit(game_id=game.pk, user=alice)
    with django_capture_on_commit_callbacks(execute=True):
        rematch = services.rematch(game_id=game.pk, user=alice)
    assert [(c.game_id, c.version) for c in published] == [
        (rematch.pk, version(rematch)),
        (game.pk, version(game)),  # its page now links to the rematch
    ]


def test_nothing_is_published_when_the_transaction_rolls_back(
    published, django_capture_on_commit_callbacks, alice
):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.create_game(creator=alice, side="x")
        transaction.set_rollback(True)
    assert published == []
