"""With PostgreSQL (and no REDIS_URL) changes travel by NOTIFY on one channel
to every process's LISTEN connection. The server queues notifications for a
busy listener (it reads late, never loses them); a listener that lost its
connection resyncs from the database once it is back."""

import asyncio
import logging
import time

from django.db import DatabaseError, connection

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

CHANNEL = "games_live"


def in_use() -> bool:
    return connection.vendor == "postgresql"


def publish(change: Change | AccountChanged) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, encode([change])])


async def listen(hub: Receiver) -> None:
    """LISTEN for changes from every process; reconnect and catch up on loss."""
    import psycopg

    params = _listener_params()
    database = outage(database_service())
    delay = RECONNECT_FIRST_SECONDS
    while True:
        since = time.monotonic()
        try:
            async with await psycopg.AsyncConnection.connect(
                **params, autocommit=True
            ) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                # Changes made before LISTEN took effect (at start, or while
                # reconnecting) were not heard: wake every stream with the
                # current version of its game.
                await hub.resync()
                database.back()
                hub.listening.set()
                delay = RECONNECT_FIRST_SECONDS
                since = time.monotonic()
                async for notify in conn.notifies():
                    hub.deliver_payload(notify.payload)
        except asyncio.CancelledError:
            raise
        except (psycopg.Error, DatabaseError) as exc:
            database.lost(exc, since=since)
        except Exception:
            logger.exception("live listener failed; retrying")
        hub.listening.clear()
        await asyncio.sleep(delay)
        delay = min(delay * 2, RECONNECT_MAX_SECONDS)


def _listener_params() -> dict:
    """libpq parameters of the default database, for the listening connection."""
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return params
