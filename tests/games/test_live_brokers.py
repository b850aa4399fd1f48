"""Which broker games.live.publish uses: chosen once per configuration, not on
every publish, and chosen again when the configuration changes within one
process (as the tests' settings do): REDIS_URL set, Redis; unset again, this
process's hub (the SQLite pass's in-memory database; PostgreSQL would NOTIFY)."""

import asyncio
import uuid

import pytest

from games import live
from games.live import AccountChanged, Change
from games.live.brokers import redis_pubsub
from games.live.hub import hub


@pytest.fixture
def heard_here(monkeypatch):
    """What reaches this process's hub, on an event loop of the test's."""
    loop = asyncio.new_event_loop()
    heard = []
    monkeypatch.setattr(hub, "loop", loop)
    monkeypatch.setattr(hub, "deliver", heard.append)
    yield heard, loop
    loop.close()


@pytest.mark.sqlite_only
def test_publish_follows_redis_url_as_it_changes(settings, monkeypatch, heard_here):
    heard, loop = heard_here
    sent = []
    monkeypatch.setattr(
        redis_pubsub, "publish", lambda url, change: sent.append((url, change))
    )
    # A URL no other test uses: the choice made for it is this test's.
    url = f"redis://{uuid.uuid4().hex}.invalid:6379/0"

    settings.REDIS_URL = ""
    live.publish(Change(1, 2, (3,)))
    settings.REDIS_URL = url
    live.publish(Change(1, 3, (3,)))
    live.publish(AccountChanged(3))
    settings.REDIS_URL = ""
    live.publish(Change(1, 4, (3,)))
    loop.run_until_complete(asyncio.sleep(0))  # the hub's deliveries run

    assert sent == [(url, Change(1, 3, (3,))), (url, AccountChanged(3))]
    assert heard == [Change(1, 2, (3,)), Change(1, 4, (3,))]
