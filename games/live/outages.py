"""Redis or PostgreSQL may go away. Each process then logs one line when a
service goes and one when it is back (`Outage`), not one per request or retry;
its listener tries again at least once a second (RECONNECT_*); a move made
meanwhile stands, and the publisher keeps its news for later
(brokers.redis_pubsub.RedisPublisher) without holding up the request. When the
service is back every listener resyncs, so every stream catches up about a
second later.
"""

import functools
import logging
import threading
import time

from django.db import connection

logger = logging.getLogger("games.live")

# A listener that lost its connection tries again after a quarter of a second,
# then twice as long each time up to a second: when the service is back, every
# stream catches up about a second later.
RECONNECT_FIRST_SECONDS = 0.25
RECONNECT_MAX_SECONDS = 1.0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class Outage:
    """A service that live updates need: one line in the log when it goes and
    one when it is back, however many requests and retries meet it meanwhile."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.down = False
        self._back_at = 0.0
        self._lock = threading.Lock()

    def lost(self, exc: BaseException, *, since: float) -> None:
        """`exc` ended an attempt begun at `since` (monotonic): an attempt begun
        before the service was last seen back tells nothing new."""
        with self._lock:
            if self.down or since < self._back_at:
                return
            self.down = True
        logger.warning(
            "live updates: %s unreachable (%s); streams catch up when it is back",
            self.service,
            _first_line(exc),
        )

    def back(self) -> None:
        if not self.down:  # the common case, without the lock
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
            self._back_at = time.monotonic()
        logger.warning("live updates: %s is back", self.service)


@functools.cache
def outage(service: str) -> Outage:
    """The one record per process of `service` being away, shared by the
    publishing requests and the listener."""
    return Outage(service)


def database_service() -> str:
    """The database, as the log lines name it."""
    if connection.vendor != "postgresql":
        return "the database"
    hosts = (connection.settings_dict["HOST"] or "its local socket").split(",")
    ports = str(connection.settings_dict["PORT"] or 5432).split(",")
    if len(ports) == 1:  # libpq: one port for every host
        ports *= len(hosts)
    # A primary and its standbys (DATABASE_URL's multi-host form): each named.
    named = [f"{host}:{port or 5432}" for host, port in zip(hosts, ports, strict=True)]
    return f"PostgreSQL at {', '.join(named)}"
