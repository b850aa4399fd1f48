"""How a change travels between server processes, one module per broker:
Redis pub/sub when REDIS_URL is set (redis_pubsub), else PostgreSQL's
LISTEN/NOTIFY (postgres_notify), else, with a SQLite file, datagrams to a Unix
socket per process (datagrams); with an in-memory database there is none
(games.live.publish hands a change straight to this process's hub). Each holds
its publishing side (request threads, after commit) and its listening side (a
task on the server's event loop that hands what it hears to the hub).
games.live.publish picks the broker (once per configuration, not on every
publish), games.live.hub.Hub.start the listener.

A listener hands what it hears to a `Receiver` (the process's hub), which the
brokers know only by this face: they never import the hub.
"""

import asyncio
from typing import Protocol


class Receiver(Protocol):
    # Set while every change published reaches this receiver.
    listening: asyncio.Event

    async def resync(self) -> None:
        """Catch up from the database on what was published while not listening."""

    def deliver_payload(self, payload: str | bytes) -> None:
        """A broker's message: one or more changes in the wire format."""
