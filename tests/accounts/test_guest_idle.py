"""Guests do not pile up: a guest account without activity for
GAMES_GUEST_MAX_IDLE_DAYS is closed by the worker's housekeeping
(tictactoe_site.jobs.housekeeping), its games settled as closing an account settles
them, its records kept and its name shown "(closed guest)". Activity is a page
loaded (accounts.middleware, with the your-turn emails' "last seen")."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.utils import timezone

from accounts import housekeeping
from accounts import services as account_services
from accounts.middleware import SEEN_CACHE, seen_key
from accounts.models import Guest
from games import services
from games.models import Game, GameStatus, PlayerRecord
from games.presentation import display_name
from tictactoe_site.jobs.heartbeat import start_beating

from ..conftest import play_cells
from ..support.account_client import logged_in_as


def idle_for(user, days: float) -> None:
    Guest.objects.filter(user=user).update(
        last_active_at=timezone.now() - timedelta(days=days)
    )


def invited(alice, guest):
    """alice's invitation, joined by `guest`: alice X, the guest O."""
    invitation = services.create_invitation(creator=alice)
    return services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=guest
    )


@pytest.fixture
def dora_games(alice, make_guest):
    """A guest with a game of each kind that closing settles differently."""
    dora = make_guest("dora")
    finished = invited(alice, dora)
    play_cells(finished, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))  # alice wins
    her_turn = services.rematch(game_id=finished.pk, user=dora)  # dora X
    play_cells(her_turn, (0, 0), (1, 1))  # dora to move, two moves played
    one_move = invited(alice, dora)
    play_cells(one_move, (0, 0))  # dora (O) has not moved: abortable
    alices_turn = invited(alice, dora)
    play_cells(alices_turn, (0, 0), (1, 1))  # alice (X) to move
    return dora, {
        "finished": finished.pk,
        "her turn": her_turn.pk,
        "one move": one_move.pk,
        "alice's turn": alices_turn.pk,
    }


def statuses(games: dict) -> dict:
    found = dict(Game.objects.values_list("pk", "status"))
    return {name: found[pk] for name, pk in games.items()}


def test_one_run_closes_an_idle_guest_and_settles_the_games(
    dora_games, alice, client_for, make_guest, make_user, run_tasks
):
    dora, games = dora_games
    browser = client_for(dora)
    idle_for(dora, 30.01)
    erin = make_guest("erin")
    idle_for(erin, 29.99)  # within the 30 days
    frank = make_user("frank")  # an account, not seen for a year
    get_user_model().objects.filter(pk=frank.pk).update(
        last_login=timezone.now() - timedelta(days=365)
    )

    start_beating()  # the heartbeat runs housekeeping once
    run_tasks()

    assert statuses(games) == {
        "finished": GameStatus.X_WON,
        "her turn": GameStatus.X_FORFEITS,
        "one move": GameStatus.ABORTED,
        "alice's turn": GameStatus.IN_PROGRESS,
    }
    closed = get_user_model().objects.get(pk=dora.pk)
    assert (closed.is_active, closed.has_usable_password()) == (False, False)
    assert Guest.objects.filter(pk=dora.pk).exists()  # the name says "guest"
    assert logged_in_as(browser) is None
    # Untouched: a guest active lately, an account however long away.
    for user in (erin, frank):
        user.refresh_from_db()
        assert user.is_active
    assert Guest.objects.filter(pk=erin.pk).exists()
    assert frank.has_usable_password()

    # The game left waiting on her is hers to forfeit when her turn comes.
    play_cells(Game.objects.get(pk=games["alice's turn"]), (2, 2))
    assert statuses(games)["alice's turn"] == GameStatus.O_FORFEITS
    fields = ("x_forfeits", "o_losses", "o_forfeits", "x_wins", "o_wins")
    assert PlayerRecord.objects.filter(player=dora).values_list(*fields).get() == (
        1,
        1,
        1,
        0,
        0,
    )


def test_a_closed_guest_is_named_as_such(
    dora_games, make_user, django_assert_num_queries
):
    """Where the Guest row is loaded with the user (no query of its own)."""
    dora, _ = dora_games
    idle_for(dora, 31)
    bob = make_user("bob")
    account_services.close_account(user=bob)
    assert housekeeping.close_idle_guests(timezone.now()) == 1
    users = get_user_model().objects.select_related("guest")
    closed_guest, closed_account = users.get(pk=dora.pk), users.get(pk=bob.pk)
    with django_assert_num_queries(0):
        assert display_name(closed_guest) == "dora (closed guest)"
        assert display_name(closed_account) == "bob (closed)"


def test_the_idle_days_are_configurable(settings, make_guest):
    settings.GAMES_GUEST_MAX_IDLE_DAYS = 2
    recent, idle = make_guest("recent"), make_guest("idle")
    idle_for(recent, 1.99)
    idle_for(idle, 2.01)
    assert housekeeping.close_idle_guests(timezone.now()) == 1
    active = dict(get_user_model().objects.values_list("username", "is_active"))
    assert active == {"recent": True, "idle": False}


def test_a_page_loaded_is_activity(client_for, make_guest):
    dora = make_guest("dora")
    idle_for(dora, 31)
    client = client_for(dora)
    caches[SEEN_CACHE].delete(seen_key(dora.pk))  # as if five minutes later
    before = timezone.now()
    assert client.get("/").status_code == 200
    assert Guest.objects.get(pk=dora.pk).last_active_at >= before
    assert housekeeping.close_idle_guests(timezone.now()) == 0
    dora.refresh_from_db()
    assert dora.is_active


def test_a_kept_account_is_never_closed_as_idle(client_for, make_guest):
    dora = make_guest("dora")
    idle_for(dora, 31)
    password = "a-kept-guest-password-31"
    response = client_for(dora).post(
        "/accounts/keep/",
        {"username": "dora", "password1": password, "password2": password},
    )
    assert response.status_code == 302
    assert housekeeping.close_idle_guests(timezone.now() + timedelta(days=90)) == 0
    dora.refresh_from_db()
    assert dora.is_active
