"""Where the limits count (accounts.rate_limits): a table nothing evicts, one
statement per cache operation and no COUNT(*), an address that is paused writes
no more rows, and the site's own counter says how long to wait."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts import rate_limits
from accounts.models import RateLimitCount

from ..support.account_client import logged_in_as, login

# -- the cache allauth counts in --------------------------------------------------


def test_values_live_until_their_timeout(db, clock):
    cache.set("count", [1.5, 2.5], 60)
    assert cache.get("count") == [1.5, 2.5]
    clock.advance(seconds=59)
    assert cache.get("count") == [1.5, 2.5]
    clock.advance(seconds=1)
    assert cache.get("count") is None
    assert cache.get("count", "gone") == "gone"


def test_add_takes_a_free_or_expired_key_only(db, clock):
    """allauth's lock: add() says whether it took the key."""
    assert cache.add("lock", True, 10) is True
    assert cache.add("lock", True, 10) is False
    clock.advance(seconds=10)  # a lock its holder never released
    assert cache.add("lock", True, 10) is True
    assert cache.delete("lock") is True
    assert cache.add("lock", True, 10) is True


def test_set_replaces_and_touch_and_delete(db, clock):
    cache.set("count", [1.0], 60)
    cache.set("count", [1.0, 2.0], 60)
    assert cache.get("count") == [1.0, 2.0]
    clock.advance(seconds=50)
    assert cache.touch("count", 60) is True
    clock.advance(seconds=50)
    assert cache.get("count") == [1.0, 2.0]
    assert cache.delete("count") is True
    assert cache.delete("count") is False
    assert cache.touch("count", 60) is False
    assert RateLimitCount.objects.count() == 0


@pytest.mark.parametrize(
    ("operation", "statements"),
    [
        (lambda: cache.get("k"), 1),
        (lambda: cache.set("k", [1.0], 60), 1),
        (lambda: cache.add("k", True, 10), 1),
        (lambda: cache.delete("k"), 1),
    ],
)
def test_each_operation_is_one_statement_without_a_count(db, operation, statements):
    """DatabaseCache ran SELECT COUNT(*) on every write, and culled past
    MAX_ENTRIES; this store does neither."""
    cache.set("other", [1.0], 60)
    with CaptureQueriesContext(connection) as queries:
        operation()
    assert len(queries) == statements
    assert not any("COUNT(" in query["sql"].upper() for query in queries)


def test_ten_thousand_counts_from_500_networks_evict_no_live_count(settings, make_user):
    """The flood the issue describes (one IPv6 /56 is 256 /64s; 500 here, 20
    usernames each): every live count stays, the victim's included, and its
    pause comes after exactly the limit."""
    make_user("victim")
    limit = settings.LOGIN_FAILURE_LIMIT
    for n in range(limit - 1):
        Client().post(
            "/accounts/login/",
            {"login": "victim", "password": "wrong"},
            REMOTE_ADDR=f"192.0.2.{n}",
        )
    before = set(RateLimitCount.objects.values_list("key", flat=True))
    flood = {
        f"allauth:rl:allauth.account:login_failed:5/900.0/key:2001:db8:{n:x}::/user{u}"
        for n in range(500)
        for u in range(20)
    }
    for key in flood:
        cache.set(key, [1.0], 900)
    assert len(flood) == 10_000
    keys = set(RateLimitCount.objects.values_list("key", flat=True))
    assert keys == before | {cache.make_key(key) for key in flood}
    Client().post(
        "/accounts/login/",
        {"login": "victim", "password": "wrong"},
        REMOTE_ADDR="192.0.2.200",
    )
    assert logged_in_as(login("victim", address="192.0.2.201")) is None


# -- the address is checked first --------------------------------------------------


def test_a_paused_address_writes_no_more_rows(settings, db):
    """Seen before: each refused attempt from a paused address still wrote a
    count for its username (25 rows after 5 failures and 20 refusals)."""
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        response = Client().post(
            "/accounts/login/",
            {"login": f"user{n}", "password": "wrong"},
            REMOTE_ADDR="192.0.2.7",
        )
        assert response.status_code == 400
    rows = RateLimitCount.objects.count()
    # allauth's 30 logins a minute per address, and one per username tried
    assert rows == 1 + 1 + settings.LOGIN_FAILURE_LIMIT
    for n in range(20):
        response = Client().post(
            "/accounts/login/",
            {"login": f"other{n}", "password": "wrong"},
            REMOTE_ADDR="192.0.2.7",
        )
        assert response.status_code == 429
    assert RateLimitCount.objects.count() == rows


# -- the site's own counter --------------------------------------------------------


def test_hit_counts_to_the_limit_then_says_the_wait(db, clock):
    window = timedelta(minutes=10)
    for _ in range(3):
        assert rate_limits.hit("mine", limit=3, window=window) is None
        clock.advance(minutes=1)
    stored = RateLimitCount.objects.get(key="mine")
    # The oldest of the three, counted at 12:00, leaves the window at 12:10.
    assert rate_limits.hit("mine", limit=3, window=window) == timedelta(minutes=7)
    assert RateLimitCount.objects.get(key="mine").value == stored.value  # unchanged
    clock.advance(minutes=6, seconds=59)
    assert rate_limits.hit("mine", limit=3, window=window) == timedelta(seconds=1)
    clock.advance(seconds=1)
    assert rate_limits.hit("mine", limit=3, window=window) is None
    assert rate_limits.hit("other", limit=3, window=window) is None


def test_an_action_that_waited_for_the_row_is_told_no_more_than_the_window(
    db, monkeypatch
):
    """One action arrives at 12:00:00; while it waits for the row's lock,
    another counts itself at 12:00:01; it gets the lock at 12:00:02. Its wait
    runs from then: 59:59, not 1:00:01 (seen as Retry-After 3601 for a one-hour
    window, tests/served/test_guests_served.py)."""
    window = timedelta(hours=1)
    arrived = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    reads = []

    def now() -> datetime:
        reads.append(None)
        if len(reads) > 1:
            return arrived + timedelta(seconds=2)
        RateLimitCount.objects.create(
            key="queued",
            value=[(arrived + timedelta(seconds=1)).timestamp()],
            expires_at=arrived + window,
        )
        return arrived

    monkeypatch.setattr("django.utils.timezone.now", now)
    wait = rate_limits.hit("queued", limit=1, window=window)
    assert wait == timedelta(minutes=59, seconds=59)


@pytest.mark.postgresql_only  # threads on one SQLite test database share a cache
@pytest.mark.django_db(transaction=True)
def test_simultaneous_hits_cannot_pass_the_limit_together():
    """20 at once against a limit of 5, the row new: exactly 5 are counted."""
    barrier = threading.Barrier(20, timeout=30)

    def one() -> timedelta | None:
        try:
            barrier.wait()
            return rate_limits.hit("race", limit=5, window=timedelta(minutes=1))
        finally:
            connections.close_all()

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: one(), range(20)))
    assert answers.count(None) == 5
    assert len(RateLimitCount.objects.get(key="race").value) == 5
