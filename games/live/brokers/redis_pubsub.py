"""With REDIS_URL set (several hosts, any database) changes travel through
Redis pub/sub. The channel is named after a token stored in the database
(SiteIdentity), so every host that shares the database shares the channel,
however it spells DATABASE_URL. Redis queues messages for a busy subscriber;
a listener that lost its connection resyncs from the database once it is back,
and a publisher that could not reach Redis keeps its news for later
(`RedisPublisher`) without holding up the request."""

import asyncio
import functools
import logging
import threading
import time
import urllib.parse

from django.db import DatabaseError, close_old_connections, connection

from games.models import SiteIdentity

from ..changes import AccountChanged, Change
from ..outages import (
    RECONNECT_FIRST_SECONDS,
    RECONNECT_MAX_SECONDS,
    database_service,
    outage,
)
from ..wire import encode
from . import Receiver

logger = logging.getLogger("games.live")

# How long a process waits on Redis before it counts it gone: never longer per
# request (a move stands whatever happens to its news).
REDIS_TIMEOUT_SECONDS = 1.0


def redis_service(url: str) -> str:
    """Redis, as the log lines name it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "unix":
        return f"Redis at {parts.path}"
    return f"Redis at {parts.hostname}:{parts.port or 6379}"


def redis_channel() -> str:
    """The Redis channel of this site, named after the token in its database
    (SiteIdentity): every host that shares the database hears every other,
    however each spells DATABASE_URL, and sites (or test runs) sharing a Redis
    server do not hear each other (pub/sub ignores the Redis database number)."""
    return _redis_channel(str(connection.settings_dict["NAME"]))


@functools.cache
def _redis_channel(database: str) -> str:
    """Read once per process and database (publishing moves ask every time)."""
    return f"tictactoe:{SiteIdentity.current().token}:live"


def _redis_options() -> dict:
    """Short timeouts; no retries inside redis-py: a publisher that fails keeps
    its news for later, a listener reconnects and resyncs on its own (redis-py's
    own reconnection would resubscribe without the resync)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return {
        "socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
        "socket_timeout": REDIS_TIMEOUT_SECONDS,
        "retry": Retry(NoBackoff(), 0),
    }


class RedisPublisher:
    """Publishes from request threads and never holds one up on a Redis that
    is gone. A change that could not be published waits in a backlog
    (coalesced by game, as the Postman's), and so does every change after it,
    at once, until a thread sends the backlog to a Redis that answers again.
    Listeners that lost Redis too resync from the database when it is back;
    the backlog is for those that did not (a publish that timed out while their
    connections held)."""

    RETRY_SECONDS = 0.5
    CHANGES_PER_MESSAGE = 200

    def __init__(self, url: str, channel: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url, **_redis_options())
        self.channel = channel
        self.outage = outage(redis_service(url))
        self._lock = threading.Lock()
        self._backlog: dict = {}  # key (a game, an account) -> its latest change
        self._thread: threading.Thread | None = None

    def publish(self, change: Change | AccountChanged) -> None:
        import redis

        with self._lock:
            if self._backlog:  # Redis failed lately: after what waits
                self._keep(change)
                return
        started = time.monotonic()
        try:
            self.client.publish(self.channel, encode([change]))
        except redis.RedisError as exc:
            self.outage.lost(exc, since=started)
            with self._lock:
                self._keep(change)
            return
        self.outage.back()

    def _keep(self, change: Change | AccountChanged) -> None:
        """Under the lock: into the backlog, and a thread to send it."""
        self._backlog[change.key] = change.merged(self._backlog.get(change.key))
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._retry, name="live-redis-retry", daemon=True
            )
            self._thread.start()

    def _retry(self) -> None:
        import redis

        while True:
            time.sleep(self.RETRY_SECONDS)  # the pace of tries while Redis is away
            with self._lock:
                batch = list(self._backlog.values())
            started = time.monotonic()
            try:
                for start in range(0, len(batch), self.CHANGES_PER_MESSAGE):
                    chunk = batch[start : start + self.CHANGES_PER_MESSAGE]
                    self.client.publish(self.channel, encode(chunk))
            except redis.RedisError as exc:
                self.outage.lost(exc, since=started)
                continue
            self.outage.back()
            with self._lock:
                for change in batch:  # not what was merged in meanwhile
                    if self._backlog.get(change.key) is change:
                        del self._backlog[change.key]
                if not self._backlog:
                    self._thread = None
                    return


@functools.cache
def _publisher(url: str, channel: str) -> RedisPublisher:
    return RedisPublisher(url, channel)  # thread-safe: a pool of connections


def publish(url: str, change: Change | AccountChanged) -> None:
    _publisher(url, redis_channel()).publish(change)


async def listen(hub: Receiver, url: str) -> None:
    """SUBSCRIBE to changes from every process; reconnect and catch up on
    loss. The database names the channel and tells the versions to catch
    up with: its failures are told apart from Redis's."""
    import redis.asyncio

    server = outage(redis_service(url))
    database = outage(database_service())
    delay = RECONNECT_FIRST_SECONDS
    while True:
        since = time.monotonic()
        try:
            channel = await asyncio.to_thread(_channel_from_database)
            async with (
                redis.asyncio.Redis.from_url(url, **_redis_options()) as client,
                client.pubsub() as pubsub,
            ):
                await pubsub.subscribe(channel)
                server.back()
                # As for PostgreSQL: what was published before the
                # subscription took effect is read from the database.
                await hub.resync()
                database.back()
                hub.listening.set()
                delay = RECONNECT_FIRST_SECONDS
                since = time.monotonic()
                async for message in pubsub.listen():
                    if message["type"] == "message":
                        hub.deliver_payload(message["data"])
        except asyncio.CancelledError:
            raise
        except (redis.RedisError, OSError) as exc:
            server.lost(exc, since=since)
        except DatabaseError as exc:
            database.lost(exc, since=since)
        except Exception:
            logger.exception("live listener failed; retrying")
        hub.listening.clear()
        await asyncio.sleep(delay)
        delay = min(delay * 2, RECONNECT_MAX_SECONDS)


def _channel_from_database() -> str:
    """The Redis channel (in a thread: the ORM is synchronous)."""
    close_old_connections()
    try:
        return redis_channel()
    finally:
        close_old_connections()
