"""Shared fixtures. Games are always built through games.services, so tests never
create a state the product itself cannot reach."""

from datetime import UTC, datetime, timedelta

import pytest
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.management import call_command
from django.test import Client
from django.utils import translation

from games import services
from games.live.hub import hub
from games.models import Game

from .support.engines import (  # noqa: F401  (pytest hooks)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_collectionfinish,
)
from .support.fuzz import world  # noqa: F401  (a fixture)
from .support.hosts import backend  # noqa: F401  (a fixture)

PASSWORD = "a-long-test-password-42"
# The authenticator-app secret of every staff account make_user creates (RFC 4648
# base32, as an app is given it).
STAFF_TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


@pytest.fixture(autouse=True)
def empty_page_cache():
    """Every test starts without rendered pages (games.page_cache) and without
    players recorded as seen (accounts.middleware): their keys hold database ids
    and versions, which the next test's database repeats."""
    for alias in ("pages", "seen"):
        caches[alias].clear()
    yield
    for alias in ("pages", "seen"):
        caches[alias].clear()


@pytest.fixture(autouse=True)
def default_language():
    """Every test starts and ends in the default language: a request's language
    (LocaleMiddleware) stays active in the thread after it, and would otherwise
    carry over into the next test's mails and messages."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture
def fresh_hub():
    """Stops this process's live-update hub after the test (games.live): a test
    that opens streams starts it on its own event loop, which ends with it."""
    yield
    hub.stop()


@pytest.fixture
def run_tasks(transactional_db):
    """Run what the task queue holds now, as the worker would, then return.
    Outside a test transaction: the worker closes and reopens its connection
    between tasks, which PostgreSQL's pool refuses inside one."""

    def run() -> None:
        call_command(
            "db_worker",
            batch=True,
            queue_name="*",
            startup_delay=False,
            reload=False,
            verbosity=0,
        )

    return run


@pytest.fixture
def worker_beating(run_tasks):
    """A task worker that has just beaten (tictactoe_site.jobs.heartbeat)."""
    from tictactoe_site.jobs.heartbeat import start_beating

    start_beating()
    run_tasks()


@pytest.fixture
def make_user(db):
    """make_user(username, **fields). A staff account gets an authenticator app
    (STAFF_TOTP_SECRET), as staff must have to open the admin
    (accounts.admin_gate); tests/accounts/test_mfa_admin.py takes it away."""

    def make(username: str, **extra):
        user = get_user_model().objects.create_user(
            username=username, password=PASSWORD, **extra
        )
        if user.is_staff:
            Authenticator.objects.create(
                user=user,
                type=Authenticator.Type.TOTP,
                data={"secret": STAFF_TOTP_SECRET},
            )
        return user

    return make


@pytest.fixture
def make_guest(db):
    """make_guest(username): a guest account as accounts.guests makes one (no
    password, no email address, a Guest row), without the invitation."""
    from accounts.models import Guest

    def make(username: str):
        user = get_user_model()(username=username)
        user.set_unusable_password()
        user.save()
        Guest.objects.create(user=user)
        return user

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def carol(make_user):
    return make_user("carol")


@pytest.fixture
def game(alice, bob) -> Game:
    """alice (X) against bob (O), no moves yet."""
    return services.create_game(creator=alice, opponent=bob, side="x")


def play_cells(game: Game, *cells: tuple[int, int]) -> Game:
    """Play `cells` in order, each by whichever player is to move."""
    for row, col in cells:
        game.refresh_from_db()
        mover = game.player_x if game.next_mark == "X" else game.player_o
        game = services.play_move(game_id=game.pk, user=mover, row=row, col=col)
    game.refresh_from_db()
    return game


@pytest.fixture
def play():
    return play_cells


@pytest.fixture
def client_for(db):
    """A test client logged in as the given user (a fresh cookie jar each)."""

    def make(user, **kwargs) -> Client:
        client = Client(**kwargs)
        client.force_login(user)
        return client

    return make


def snapshot_tables() -> tuple[list, ...]:
    """Every stored game and move, field by field: compared before and after a
    rejected request to prove that nothing changed."""
    from games.models import Move, PlayerRecord, PlayerResult, Series

    games = list(Game.objects.order_by("pk").values())
    moves = list(Move.objects.order_by("pk").values())
    series = list(Series.objects.order_by("pk").values())
    results = list(PlayerResult.objects.order_by("pk").values())
    records = list(PlayerRecord.objects.order_by("pk").values())
    return games, moves, series, results, records


def pytest_terminal_summary(terminalreporter):
    """How many hostile requests the adversarial tests sent
    (tests/support/hostile.py)."""
    from .support.hostile import TALLY

    if TALLY.sent:
        terminalreporter.write_sep("-", "hostile requests")
        terminalreporter.write_line(TALLY.summary())


# -- a history of finished games (records, archive) -------------------------

X_WINS_ROW_0 = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
O_WINS_ROW_1 = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2), (1, 2)]
DRAW = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]


def new_game(x, o):
    return services.create_game(creator=x, opponent=o, side="x")


def forfeit_now(game):
    """The player to move (X on an empty board) forfeits."""
    mover = game.player_x if game.next_mark == "X" else game.player_o
    return services.forfeit(game_id=game.pk, user=mover)


@pytest.fixture
def history(alice, bob, carol, play):
    """Six finished games, in this order of ending (alice's view in comments)."""
    games = {}
    games["win_as_x"] = play(new_game(alice, bob), *X_WINS_ROW_0)  # W as X
    games["draw_as_o"] = play(new_game(bob, alice), *DRAW)  # D as O
    games["forfeit_as_x"] = forfeit_now(new_game(alice, bob))  # forfeit as X
    games["win_as_o"] = play(new_game(carol, alice), *O_WINS_ROW_1)  # W as O
    games["self_play"] = play(new_game(alice, alice), *X_WINS_ROW_0)  # not counted
    games["bob_forfeits"] = forfeit_now(new_game(bob, alice))  # W as O
    services.create_game(creator=alice, opponent=carol)  # still running: no rows
    return games


@pytest.fixture
def as_alice(client_for, alice):
    return client_for(alice)


@pytest.fixture
def as_bob(client_for, bob):
    return client_for(bob)


@pytest.fixture
def as_carol(client_for, carol):
    return client_for(carol)


@pytest.fixture
def clock(monkeypatch):
    """timezone.now(), at 2026-11-27 12:00 UTC until the test moves it."""

    class Clock:
        now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

        def advance(self, **delta) -> None:
            self.now += timedelta(**delta)

    moved = Clock()
    monkeypatch.setattr("django.utils.timezone.now", lambda: moved.now)
    return moved
