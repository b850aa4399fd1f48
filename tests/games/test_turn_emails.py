"""Your turn, by email (games.turn_emails): the opt-in on the account page,
the job the worker runs (with a controlled clock: `now` is passed in), the
signed one-click unsubscribe, and the activity stamp (accounts.middleware)."""

import contextlib
import fcntl
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail, signing
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from accounts import services as account_services
from accounts.middleware import SEEN_CACHE, seen_key
from accounts.models import TurnEmailPreference
from games import services, turn_emails
from games.models import Game
from tictactoe_site.jobs.heartbeat import queue_periodic, start_beating
from tictactoe_site.jobs.job_locks import advisory_key
from tictactoe_site.jobs.mail import deliver, from_json
from tictactoe_site.lib.deferred import DEFER

from ..conftest import play_cells

AFTER = timedelta(hours=1)
EVERY = timedelta(hours=24)
SIGNED = "http://games.example"


@pytest.fixture(autouse=True)
def turn_email_settings(settings):
    settings.GAMES_TURN_EMAIL_AFTER = 3600
    settings.GAMES_TURN_EMAIL_EVERY = 86400
    settings.SITE_URL = SIGNED
    # As in production: queued in the caller's transaction, sent by the worker.
    settings.MAILERS = {
        "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
        "relay": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
    }


def confirm(user, email: str, *, verified: bool = True) -> None:
    EmailAddress.objects.create(user=user, email=email, verified=verified, primary=True)


@pytest.fixture
def bob_opted_in(bob):
    confirm(bob, "bob@example.com")
    account_services.set_turn_emails(user=bob, enabled=True)


def waiting_since(game) -> object:
    game.refresh_from_db()
    return game.updated_at


def queued() -> list:
    """The messages queued for the worker, as it rebuilds them to send them
    (the worker itself runs in test_the_worker_runs_the_job_on_its_own_schedule)."""
    return [
        from_json(row.args_kwargs["args"][0])
        for row in DBTaskResult.objects.filter(task_path=deliver.module_path).order_by(
            "enqueued_at"
        )
    ]


def text(response) -> str:
    return response.content.decode()


# -- the query ------------------------------------------------------------------


def test_waiting_on_lists_the_games_in_progress_where_the_user_is_to_move(
    alice, bob, carol
):
    to_move_first = services.create_game(creator=alice, opponent=bob, side="o")
    alices_turn = services.create_game(creator=alice, opponent=bob, side="x")
    after_a_move = play_cells(
        services.create_game(creator=carol, opponent=bob, side="x"), (0, 0)
    )
    play_cells(services.create_game(creator=bob, opponent=carol, side="x"), (0, 0))
    finished = services.create_game(creator=alice, opponent=bob, side="o")
    services.forfeit(game_id=finished.pk, user=bob)
    assert list(Game.objects.waiting_on(bob).values_list("pk", flat=True)) == [
        to_move_first.pk,
        after_a_move.pk,
    ]
    # The same games as the rule says, game by game.
    assert [g.pk for g in Game.objects.order_by("updated_at") if g.is_turn_of(bob)] == [
        to_move_first.pk,
        after_a_move.pk,
    ]
    assert list(Game.objects.waiting_on(alice).values_list("pk", flat=True)) == [
        alices_turn.pk
    ]


# -- the job ------------------------------------------------------------------------


def test_nothing_before_a_game_has_waited_an_hour(alice, bob, bob_opted_in):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    start = waiting_since(game)
    assert (
        turn_emails.send_due_turn_emails(now=start + AFTER - timedelta(seconds=1)) == 0
    )
    assert queued() == []
    assert TurnEmailPreference.objects.get(user=bob).last_sent_at is None


def test_one_email_lists_every_game_waiting_with_links(alice, bob, carol, bob_opted_in):
    first = services.create_game(creator=alice, opponent=bob, side="o")
    second = play_cells(
        services.create_game(creator=carol, opponent=bob, side="x"), (1, 1)
    )
    services.create_game(creator=alice, opponent=bob, side="x")  # alice's turn
    now = waiting_since(first) + AFTER + timedelta(seconds=1)
    assert turn_emails.send_due_turn_emails(now=now) == 1
    assert mail.outbox == []  # queued for the worker
    (sent,) = queued()
    assert sent.to == ["bob@example.com"]
    assert sent.subject == "[tictactoe] 2 games are waiting for your move"
    assert f"- bob (X) vs alice (O): {SIGNED}/games/{first.pk}/\n" in sent.body
    assert f"- carol (X) vs bob (O): {SIGNED}/games/{second.pk}/\n" in sent.body
    assert sent.body.count(f"{SIGNED}/games/") == 2
    url = sent.extra_headers["List-Unsubscribe"].strip("<>")
    assert url.startswith(f"{SIGNED}/accounts/turn-email/unsubscribe/")
    assert account_services.unsubscriber(url.split("/")[-2]) == bob.pk
    assert f"Stop these emails with one click: {url}\n" in sent.body
    assert sent.extra_headers["List-Unsubscribe"] == f"<{url}>"
    assert sent.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    message = sent.message()
    assert message["List-Unsubscribe"] == f"<{url}>"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert TurnEmailPreference.objects.get(user=bob).last_sent_at == now


@pytest.mark.parametrize("case", ["not opted in", "opted out", "unconfirmed", "none"])
def test_nothing_without_the_opt_in_or_a_confirmed_address(alice, bob, case):
    if case == "not opted in":
        confirm(bob, "bob@example.com")
    elif case == "opted out":
        confirm(bob, "bob@example.com")
        account_services.set_turn_emails(user=bob, enabled=True)
        account_services.set_turn_emails(user=bob, enabled=False)
    elif case == "unconfirmed":
        confirm(bob, "bob@example.com", verified=False)
        account_services.set_turn_emails(user=bob, enabled=True)
    else:
        account_services.set_turn_emails(user=bob, enabled=True)
    game = services.create_game(creator=alice, opponent=bob, side="o")
    now = waiting_since(game) + 2 * AFTER
    assert turn_emails.send_due_turn_emails(now=now) == 0
    assert queued() == []


@pytest.mark.parametrize("how", ["page", "login"])
def test_nothing_while_the_player_has_been_on_the_site_since_the_wait_began(
    alice, bob, bob_opted_in, how
):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    start = waiting_since(game)
    if how == "page":
        TurnEmailPreference.objects.filter(user=bob).update(
            last_seen_at=start + timedelta(minutes=30)
        )
    else:
        bob.last_login = start + timedelta(minutes=30)
        bob.save(update_fields=["last_login"])
    assert turn_emails.send_due_turn_emails(now=start + 3 * AFTER) == 0
    assert queued() == []
    # Seen before the wait began does not count.
    TurnEmailPreference.objects.filter(user=bob).update(
        last_seen_at=start - timedelta(seconds=1)
    )
    bob.last_login = start - timedelta(seconds=1)
    bob.save(update_fields=["last_login"])
    assert turn_emails.send_due_turn_emails(now=start + 3 * AFTER) == 1
    assert len(queued()) == 1


def test_at_most_one_a_day_and_never_twice_across_a_worker_restart(
    alice, bob, bob_opted_in
):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    now = waiting_since(game) + AFTER + timedelta(seconds=1)
    assert turn_emails.send_due_turn_emails(now=now) == 1
    assert len(queued()) == 1
    # A restarted worker runs the job again: same clock, then later in the day.
    for later in (timedelta(0), timedelta(hours=1), EVERY - timedelta(seconds=1)):
        assert turn_emails.send_due_turn_emails(now=now + later) == 0
        assert len(queued()) == 1
    # A day on, the game still waits: one more.
    assert turn_emails.send_due_turn_emails(now=now + EVERY) == 1
    assert len(queued()) == 2
    assert turn_emails.send_due_turn_emails(now=now + EVERY) == 0


def test_the_record_and_the_queued_email_commit_together(
    alice, bob, bob_opted_in, monkeypatch
):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    now = waiting_since(game) + 2 * AFTER

    def crash(*args, **kwargs):
        raise RuntimeError("the worker stops here")

    monkeypatch.setattr(TurnEmailPreference, "save", crash)
    with pytest.raises(RuntimeError):
        turn_emails.send_due_turn_emails(now=now)
    # Nothing queued, nothing recorded: the next run sends it.
    assert not DBTaskResult.objects.exists()
    assert TurnEmailPreference.objects.get(user=bob).last_sent_at is None
    monkeypatch.undo()
    assert turn_emails.send_due_turn_emails(now=now) == 1
    assert len(queued()) == 1


def test_the_worker_runs_the_job_on_its_own_schedule(
    alice, bob, bob_opted_in, run_tasks, settings
):
    settings.GAMES_TURN_EMAIL_AFTER = 1
    game = services.create_game(creator=alice, opponent=bob, side="o")
    Game.objects.filter(pk=game.pk).update(
        updated_at=timezone.now() - timedelta(seconds=5)
    )
    start_beating()
    run_tasks()  # beat queues the job, the job queues the mail, deliver sends it
    (sent,) = mail.outbox
    assert sent.subject == "[tictactoe] A game is waiting for your move"
    assert f"{SIGNED}/games/{game.pk}/" in sent.body
    job = DBTaskResult.objects.get(task_path="games.turn_emails.send_turn_emails")
    assert (job.status, job.return_value) == ("SUCCESSFUL", "1 queued")
    # The next beats within the minute do not queue the job again.
    start_beating()
    run_tasks()
    assert (
        DBTaskResult.objects.filter(
            task_path="games.turn_emails.send_turn_emails"
        ).count()
        == 1
    )
    assert len(mail.outbox) == 1


# -- what a run costs, one run at a time ------------------------------------------


def opt_in_many(count: int) -> list:
    """`count` players opted in with a confirmed address, straight into the
    tables (no games: nothing waits on them)."""
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"player{n}", password="!") for n in range(count)
    )
    EmailAddress.objects.bulk_create(
        EmailAddress(user=u, email=f"{u.username}@example.com", verified=True)
        for u in users
    )
    TurnEmailPreference.objects.bulk_create(
        TurnEmailPreference(user=u, enabled=True) for u in users
    )
    return users


def test_the_search_finds_whom_the_rule_says_a_game_waits_on(
    alice, bob, carol, make_user
):
    """`due` asks "whose turn" in SQL (games.queries.turn_of); the players it
    finds are those games.rules says a game waits on, game by game."""
    dave, erin = make_user("dave"), make_user("erin")
    players = [alice, bob, carol, dave, erin]
    for player in players:
        confirm(player, f"{player.username}@example.com")
        account_services.set_turn_emails(user=player, enabled=True)
    services.create_game(creator=alice, opponent=bob, side="o")  # X: bob
    play_cells(services.create_game(creator=bob, opponent=carol, side="x"), (0, 0))
    play_cells(services.create_game(creator=erin, opponent=alice, side="x"), (1, 1))
    play_cells(services.create_game(creator=dave, opponent=dave), (0, 0), (1, 1))
    services.create_game(creator=erin)  # open: waits on nobody
    now = timezone.now() + 2 * AFTER
    assert turn_emails.candidates(now) == sorted(
        player.pk
        for player in players
        if any(game.is_turn_of(player) for game in Game.objects.all())
    )
    assert turn_emails.candidates(now) == sorted([alice.pk, bob.pk, carol.pk, dave.pk])


@pytest.mark.parametrize("idle", [10, 10_000])
def test_a_run_costs_what_its_mail_costs_however_many_opted_in(
    alice, bob, carol, bob_opted_in, idle, django_assert_num_queries
):
    opt_in_many(idle)
    # Nothing waits on bob: his move is made, or the game is over, or it is
    # a game between others.
    play_cells(services.create_game(creator=alice, opponent=bob, side="o"), (0, 0))
    services.forfeit(
        game_id=services.create_game(creator=alice, opponent=bob, side="o").pk,
        user=bob,
    )
    game = services.create_game(creator=alice, opponent=carol, side="o")
    now = waiting_since(game) + 2 * AFTER
    with django_assert_num_queries(1):
        assert turn_emails.send_due_turn_emails(now=now) == 0
    # One game waits on bob: one email, the same cost with 10 idle players or
    # 10,000: the search, then the email's transaction (begin, the locked
    # preference, address, games, the queued mail, the record, commit).
    waiting = services.create_game(creator=carol, opponent=bob, side="o")
    now = waiting_since(waiting) + 2 * AFTER
    with django_assert_num_queries(8):
        assert turn_emails.send_due_turn_emails(now=now) == 1
    assert [message.to for message in queued()] == [["bob@example.com"]]


@contextlib.contextmanager
def run_going_elsewhere(tmp_path, monkeypatch):
    """The turn-email job's lock, held by another process: PostgreSQL's advisory
    lock from a connection of its own; on SQLite the lock file beside the
    database (a file database: the tests' in-memory one has no neighbours)."""
    if connection.vendor == "postgresql":
        params = connection.get_connection_params()
        key = advisory_key("turn-emails")
        with connection.Database.connect(**params, autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(%s)", [key])
            yield
            # Not left to the end of the connection: the server frees the
            # locks of a closed connection a moment after the client has gone.
            other.execute("SELECT pg_advisory_unlock(%s)", [key])
        return
    database = tmp_path / "db.sqlite3"
    monkeypatch.setitem(connection.settings_dict, "NAME", str(database))
    with open(f"{database}.turn-emails-lock", "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


def test_a_run_skips_while_another_is_still_going(
    alice, bob, bob_opted_in, tmp_path, monkeypatch
):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    Game.objects.filter(pk=game.pk).update(updated_at=timezone.now() - 2 * AFTER)
    with run_going_elsewhere(tmp_path, monkeypatch):
        assert turn_emails.send_turn_emails.call() == turn_emails.STILL_RUNNING
        assert queued() == []
        assert TurnEmailPreference.objects.get(user=bob).last_sent_at is None
    # The other run is over: the next one sends.
    assert turn_emails.send_turn_emails.call() == "1 queued"
    assert len(queued()) == 1


def test_the_job_is_not_queued_again_while_a_run_waits_or_runs(db):
    """A run slower than a minute is not joined by a queue of more."""
    queued_long_ago = turn_emails.send_turn_emails.enqueue()
    later = timezone.now() + 10 * turn_emails.RUN_EVERY
    queue_periodic(later)
    jobs = DBTaskResult.objects.filter(
        task_path=turn_emails.send_turn_emails.module_path
    )
    assert [str(job.pk) for job in jobs] == [queued_long_ago.id]
    jobs.update(status="RUNNING")
    queue_periodic(later)
    assert jobs.count() == 1
    jobs.update(status="SUCCESSFUL")
    queue_periodic(later)  # the last run is over and older than a minute
    assert jobs.count() == 2


# -- the account page -------------------------------------------------------------


def test_the_account_page_offers_the_choice_only_with_a_confirmed_address(
    client_for, bob, django_assert_num_queries
):
    client = client_for(bob)
    page = text(client.get("/accounts/password/change/"))
    assert 'action="/accounts/turn-email/"' not in page
    assert '<a href="/accounts/email/">add and confirm one</a>' in page
    response = client.post("/accounts/turn-email/", {"enabled": "on"})
    assert response.status_code == 400
    assert "Confirm an email address first" in text(response)
    assert not TurnEmailPreference.objects.exists()
    confirm(bob, "bob@example.com")
    account_services.set_turn_emails(user=bob, enabled=False)
    # The user, second factors, blocks, address and choice, recorded browsers
    # (none: force_login).
    with django_assert_num_queries(5):
        page = text(client.get("/accounts/password/change/"))
    assert 'action="/accounts/turn-email/"' in page
    assert 'name="enabled"' in page
    assert "checked" not in page.split('action="/accounts/turn-email/"')[1][:400]


def test_opting_in_and_out_on_the_account_page(client_for, bob, bob_opted_in):
    client = client_for(bob)
    account_services.set_turn_emails(user=bob, enabled=False)
    response = client.post("/accounts/turn-email/", {"enabled": "on"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/change/"
    assert TurnEmailPreference.objects.get(user=bob).enabled is True
    page = text(client.get("/accounts/password/change/"))
    assert "You will get an email when a game has waited on your move." in page
    assert 'name="enabled" id="id_enabled" checked' in page
    response = client.post("/accounts/turn-email/", {})
    assert response.status_code == 302
    assert TurnEmailPreference.objects.get(user=bob).enabled is False
    page = text(client.get("/accounts/password/change/"))
    assert "You will not get emails about games waiting on your move." in page
    assert client.get("/accounts/turn-email/").status_code == 405


def test_opting_in_needs_a_login(client):
    response = client.post("/accounts/turn-email/", {"enabled": "on"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


# -- unsubscribing ------------------------------------------------------------------


def test_the_unsubscribe_link_works_logged_out(bob, bob_opted_in):
    client = Client(enforce_csrf_checks=True)
    path = account_services.unsubscribe_url(bob.pk).removeprefix(SIGNED)
    page = client.get(path)
    assert page.status_code == 200
    assert "Stop your-turn emails" in text(page)
    assert '<form method="post">' in text(page)
    assert TurnEmailPreference.objects.get(user=bob).enabled is True
    # RFC 8058: the mail program POSTs "List-Unsubscribe=One-Click", no token.
    response = client.post(path, {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    assert "You will not get emails about games waiting on your move." in text(response)
    assert TurnEmailPreference.objects.get(user=bob).enabled is False
    assert client.post(path).status_code == 200  # twice is once


@pytest.mark.parametrize(
    "token",
    [
        "tampered",
        "foreign purpose",
        "empty salt",
        "no salt",
        "other user's, edited",
    ],
)
def test_a_broken_unsubscribe_link_is_a_400_page(bob, bob_opted_in, alice, token):
    good = account_services.unsubscribe_url(bob.pk).removeprefix(SIGNED).split("/")[-2]
    salt = account_services.UNSUBSCRIBE_SALT
    value = {
        "tampered": good[:-2] + ("AA" if not good.endswith("AA") else "BB"),
        "foreign purpose": signing.dumps(bob.pk, salt="accounts.something-else"),
        # Signed with the site's key for no purpose: the token must be tied to
        # unsubscribing (a product salt of "" or Django's default fails here).
        "empty salt": signing.dumps(bob.pk, salt=""),
        "no salt": signing.dumps(bob.pk),
        "other user's, edited": good.replace(
            signing.dumps(bob.pk, salt=salt).split(":")[0],
            signing.dumps(alice.pk, salt=salt).split(":")[0],
        ),
    }[token]
    path = f"/accounts/turn-email/unsubscribe/{value}/"
    for method in ("get", "post"):
        response = getattr(Client(), method)(path)
        assert response.status_code == 400
        assert "This unsubscribe link is broken." in text(response)
    assert TurnEmailPreference.objects.get(user=bob).enabled is True


# -- activity ---------------------------------------------------------------------


def test_a_page_records_activity_at_most_every_five_minutes(
    client_for, bob, bob_opted_in
):
    client = client_for(bob)  # a login counts as seen: last_login is set
    client.get("/")
    assert TurnEmailPreference.objects.get(user=bob).last_seen_at is None
    # Five minutes later the mark has expired.
    caches[SEEN_CACHE].delete(seen_key(bob.pk))
    before = timezone.now()
    client.get("/")
    seen = TurnEmailPreference.objects.get(user=bob).last_seen_at
    assert seen is not None
    assert seen >= before
    client.get("/")
    assert TurnEmailPreference.objects.get(user=bob).last_seen_at == seen


def test_a_page_hands_the_activity_write_to_the_bridge(
    client_for, bob, bob_opted_in, django_assert_num_queries
):
    """Served through tictactoe_site.server.bridge, the page itself writes nothing: the
    UPDATE is deferred (run after the response, in a page thread)."""
    client = client_for(bob)
    client.get("/")
    caches[SEEN_CACHE].delete(seen_key(bob.pk))
    deferred = []
    with django_assert_num_queries(2):  # the user and the lobby's games
        response = client.get("/", **{DEFER: deferred.append})
    assert response.status_code == 200
    assert TurnEmailPreference.objects.get(user=bob).last_seen_at is None
    assert len(deferred) == 1
    before = timezone.now()
    deferred[0]()
    assert TurnEmailPreference.objects.get(user=bob).last_seen_at <= before
    assert TurnEmailPreference.objects.get(user=bob).last_seen_at is not None
