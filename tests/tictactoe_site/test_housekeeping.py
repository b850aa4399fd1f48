"""The task worker's housekeeping (tictactoe_site.jobs.housekeeping), run by its
heartbeat: expired sessions (with their cached copies), finished tasks older
than a day and expired rate-limit counts disappear after one run; live ones
stay. A backlog goes a batch at a time."""

from datetime import timedelta
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.cache import cache, caches
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from accounts import housekeeping as accounts_housekeeping
from accounts.models import Guest, RateLimitCount
from games import services
from tictactoe_site.jobs import housekeeping
from tictactoe_site.jobs.heartbeat import start_beating
from tictactoe_site.jobs.mail import deliver

from ..conftest import PASSWORD


def new_session(*, expired: bool):
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store["who"] = "someone"
    store.save()
    if expired:
        Session.objects.filter(pk=store.session_key).update(
            expire_date=timezone.now() - timedelta(seconds=1)
        )
    return store


def finished_task(*, ago: timedelta) -> str:
    result = deliver.enqueue({"subject": "sent"})
    DBTaskResult.objects.filter(pk=result.id).update(
        status="SUCCESSFUL", finished_at=timezone.now() - ago
    )
    return result.id


def count(key: str, *, expired: bool) -> str:
    cache.set(key, [1.0], 900)
    if expired:
        RateLimitCount.objects.filter(key=cache.make_key(key)).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
    return cache.make_key(key)


def test_one_heartbeat_clears_what_expired_and_keeps_what_lives(run_tasks):
    sessions = caches[settings.SESSION_CACHE_ALIAS]
    live_session, old_session = new_session(expired=False), new_session(expired=True)
    assert sessions.get(old_session.cache_key) is not None  # its cached copy
    recent_task = finished_task(ago=timedelta(hours=23))
    old_task = finished_task(ago=timedelta(days=1, seconds=1))
    queued = deliver.using(run_after=timezone.now() + timedelta(days=9)).enqueue({})
    live_count, old_count = (
        count("live", expired=False),
        count("old", expired=True),
    )

    start_beating()
    run_tasks()

    assert set(Session.objects.values_list("pk", flat=True)) == {
        live_session.session_key
    }
    assert sessions.get(old_session.cache_key) is None
    assert sessions.get(live_session.cache_key) is not None
    tasks = {str(pk) for pk in DBTaskResult.objects.values_list("pk", flat=True)}
    assert {recent_task, queued.id} <= tasks
    assert old_task not in tasks
    keys = set(RateLimitCount.objects.values_list("key", flat=True))
    assert live_count in keys
    assert old_count not in keys


def test_a_heartbeat_leaves_the_limits_that_still_hold(settings, run_tasks, make_user):
    """A count is stored to expire with its window: one stored already expired
    would be deleted by every heartbeat, and the limit with it. Past the guest
    limit of one address and the failed logins of one account, a run changes
    neither answer."""
    settings.GAMES_GUEST_CREATE_LIMIT = 2
    alice = make_user("alice")
    links = [
        f"/invitations/{invitation.game_id}/{invitation.secret}/guest/"
        for invitation in (services.create_invitation(creator=alice) for _ in "abc")
    ]
    made = [Client().post(link, {"name": f"guest{n}"}) for n, link in enumerate(links)]
    assert [answer.status_code for answer in made] == [302, 302, 429]
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        failed = Client(REMOTE_ADDR=f"192.0.2.{n}").post(
            "/accounts/login/", {"login": "alice", "password": "wrong"}
        )
        assert failed.status_code == 400

    start_beating()
    run_tasks()

    assert Client().post(links[2], {"name": "guest9"}).status_code == 429
    login = Client(REMOTE_ADDR="192.0.2.99").post(
        "/accounts/login/", {"login": "alice", "password": PASSWORD}
    )
    assert login.status_code == 429
    assert Guest.objects.count() == 2


def test_a_backlog_goes_a_batch_at_a_time(db, monkeypatch, make_guest):
    monkeypatch.setattr(housekeeping, "BATCH", 2)
    monkeypatch.setattr(accounts_housekeeping, "GUEST_BATCH", 2)
    for n in range(3):
        new_session(expired=True)
        count(f"old{n}", expired=True)
        finished_task(ago=timedelta(days=2))
        make_guest(f"guest{n}")
    now = timezone.now() + timedelta(days=31)  # the guests idle for 31 days
    assert housekeeping.tidy(now) == {
        "sessions": 2,
        "tasks": 2,
        "rate limit counts": 2,
        "idle guests closed": 2,
    }
    assert housekeeping.tidy(now) == {
        "sessions": 1,
        "tasks": 1,
        "rate limit counts": 1,
        "idle guests closed": 1,
    }
    assert housekeeping.tidy(now) == {
        "sessions": 0,
        "tasks": 0,
        "rate limit counts": 0,
        "idle guests closed": 0,
    }


@pytest.mark.parametrize("expired", [0, 50])
def test_a_run_costs_the_same_few_statements(db, expired, django_assert_num_queries):
    """By the indexes on the expiry dates: one statement to find expired
    sessions and one to delete them, one delete for tasks, one for counts, one
    to find idle guests (none here)."""
    for n in range(expired):
        new_session(expired=True)
        count(f"old{n}", expired=True)
    with django_assert_num_queries(5 if expired else 4):
        housekeeping.tidy(timezone.now())
    assert Session.objects.count() == 0
    assert RateLimitCount.objects.count() == 0


def test_database_sessions_without_a_cache_too(settings, db):
    """PostgreSQL's engine: every session read from the database, none cached."""
    settings.SESSION_ENGINE = "accounts.session_engines.db"
    live = new_session(expired=False)
    new_session(expired=True)
    assert housekeeping.tidy(timezone.now())["sessions"] == 1
    assert set(Session.objects.values_list("pk", flat=True)) == {live.session_key}
