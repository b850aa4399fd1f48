"""The `Hub` of each server process: its open streams, by game and by lobby
user. It wakes the streams a change concerns (games.live.subscribers: the
lobbies at most once a second), pings them all from one keep-alive ticker,
listens to the broker in use from the server's event loop
(games.live.listeners), and ends the streams of a user whose sessions may have
ended (an AccountChanged notice) once their sessions no longer log them in
(games.live.rechecks).
"""

import asyncio
import logging
import time

from django.conf import settings

from tictactoe_site.ops import metrics

from .changes import AccountChanged, Change
from .listeners import Listener, current_versions
from .rechecks import SessionRechecks
from .subscribers import LOBBY_INTERVAL_SECONDS, Coalescer, Subscriber
from .wire import decode

logger = logging.getLogger("games.live")


# The keep-alive ping: every stream gets one each KEEPALIVE_SECONDS, from one
# ticker per process that pings a slice of the streams at a time (no timer per
# stream, and no burst of every ping at once).
KEEPALIVE_SECONDS = 15.0
KEEPALIVE_SLICES = 15


class Hub:
    """The streams of this process, by game and by lobby user."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.games: dict[int, set[Subscriber]] = {}
        self.lobbies: dict[int, set[Subscriber]] = {}
        self.users: dict[int, set[Subscriber]] = {}  # every admitted stream
        self.visitors: dict[str, set[Subscriber]] = {}  # visitors', by network
        # Account notices heard so far: a stream compares it before and after
        # reading its session, so that a notice in between is not missed.
        self.account_notices = 0
        self._rechecks = SessionRechecks()
        self._lobby_counter = 0
        # The lobbies the changes since the last refresh concern: these users',
        # or every lobby when the open games changed.
        self._lobby_users: set[int] = set()
        self._every_lobby = False
        self.lobby_refresh = Coalescer(
            LOBBY_INTERVAL_SECONDS,
            self._refresh_lobbies,
            clock=time.monotonic,
            schedule=self._call_later,
        )
        self.accepting = True  # False once the server shuts down
        self.listening = asyncio.Event()
        self.slices: list[set[Subscriber]] = [set() for _ in range(KEEPALIVE_SLICES)]
        self._next_slice = 0
        self._ticks = 0
        self._ticker: asyncio.Task | None = None
        self._listener = Listener()

    # Life cycle (ASGI lifespan) -------------------------------------------------

    def start(self) -> None:
        """Bind to the running event loop and start listening to the broker."""
        self.loop = asyncio.get_running_loop()
        self.accepting = True
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._keep_alive())
        if self._listener.running:
            return  # listening already
        # Set while every change published from now on reaches this hub.
        self.listening = asyncio.Event()
        if not self._listener.start(self):
            self.listening.set()  # in memory: publish tells this hub directly

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._listener.stop()
        self.close_streams()
        self._rechecks.cancel()
        self.lobby_refresh.cancel()
        self._lobby_users.clear()
        self._every_lobby = False
        self.games.clear()
        self.lobbies.clear()
        self.users.clear()
        self.visitors.clear()
        for subscribers in self.slices:
            subscribers.clear()
        self.loop = None

    def readiness_problem(self) -> str | None:
        """What keeps this host out of a load balancer (tictactoe_site.ops.health),
        or None. The hub runs where the server started it (ASGI lifespan). A
        listener on Redis does not count: Redis is shared, and its outage would
        take every host out at once while every page still works."""
        if settings.REDIS_URL or self.loop is None or self.listening.is_set():
            return None
        return "live updates not connected"

    def close_streams(self) -> None:
        """End every open stream, and each one opened from now on, at once: the
        server is shutting down (browsers reconnect to another process)."""
        self.accepting = False
        for subscribers in [*self.games.values(), *self.lobbies.values()]:
            for subscriber in subscribers:
                subscriber.close()

    # Subscriptions (called on the event loop) -----------------------------------

    def subscribe_game(self, game_id: int) -> Subscriber:
        return self._subscribe(self.games, game_id)

    def subscribe_lobby(self, user_id: int) -> Subscriber:
        return self._subscribe(self.lobbies, user_id)

    def _subscribe(self, table: dict, key: int) -> Subscriber:
        if self.loop is not asyncio.get_running_loop():
            self.start()
        subscriber = Subscriber(self._next_slice)
        self._next_slice = (self._next_slice + 1) % KEEPALIVE_SLICES
        if not self.accepting:
            subscriber.close()
        table.setdefault(key, set()).add(subscriber)
        self.slices[subscriber.slice].add(subscriber)
        return subscriber

    def admit(self, subscriber: Subscriber, user_id: int, session_key: str) -> bool:
        """Record whose stream it is; False when the user holds
        WEB_MAX_STREAMS_PER_USER streams in this process already."""
        streams = self.users.setdefault(user_id, set())
        if len(streams) >= settings.WEB_MAX_STREAMS_PER_USER:
            if not streams:
                del self.users[user_id]
            return False
        subscriber.user_id = user_id
        subscriber.session_key = session_key
        streams.add(subscriber)
        return True

    def admit_visitor(self, subscriber: Subscriber, address: str) -> bool:
        """Record a visitor's stream (no account) as its network's; False when
        that network holds WEB_MAX_STREAMS_PER_ADDRESS streams in this process."""
        streams = self.visitors.setdefault(address, set())
        if len(streams) >= settings.WEB_MAX_STREAMS_PER_ADDRESS:
            if not streams:
                del self.visitors[address]
            return False
        subscriber.address = address
        streams.add(subscriber)
        return True

    def unsubscribe(self, key: int, subscriber: Subscriber, *, lobby=False) -> None:
        table = self.lobbies if lobby else self.games
        self.slices[subscriber.slice].discard(subscriber)
        _discard(table, key, subscriber)
        if subscriber.user_id is not None:
            _discard(self.users, subscriber.user_id, subscriber)
        if subscriber.address is not None:
            _discard(self.visitors, subscriber.address, subscriber)

    # Sessions ------------------------------------------------------------------

    def account_changed(self, user_id: int) -> None:
        """A notice: re-check the sessions of the user's streams. Runs on the
        event loop."""
        self.account_notices += 1
        self.recheck_user(user_id)

    def recheck_user(self, user_id: int) -> None:
        """Re-check the sessions of the user's streams (not a notice: streams
        opening meanwhile need not re-check theirs)."""
        subscribers = self.users.get(user_id)
        if subscribers:
            self._rechecks.start(list(subscribers), end_if_unsure=True)

    def _recheck_everyone(self) -> None:
        """After the broker connection was lost, notices may have been missed:
        a precaution, so a failure ends nothing (the outage ended no session)."""
        subscribers = [s for group in self.users.values() for s in group]
        if subscribers:
            self._rechecks.start(subscribers, end_if_unsure=False)

    # Keep-alive ----------------------------------------------------------------

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS / KEEPALIVE_SLICES)
            self.tick()

    def tick(self) -> None:
        """Ping the next slice of the streams."""
        for subscriber in self.slices[self._ticks % KEEPALIVE_SLICES]:
            subscriber.ping()
        self._ticks += 1

    # Delivery ------------------------------------------------------------------

    def deliver(self, change: Change | AccountChanged) -> None:
        """Wake the streams that care. Runs on the event loop."""
        if isinstance(change, AccountChanged):
            self.account_changed(change.user_id)
            return
        for subscriber in self.games.get(change.game_id, ()):
            subscriber.notify(change.version)
        if change.open_games:
            self._every_lobby = True
        else:
            self._lobby_users.update(change.player_ids)
        self.lobby_refresh.flush_soon()

    def _call_later(self, delay: float, callback) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def _refresh_lobbies(self) -> None:
        """Wake the lobbies the changes since the last refresh concern (called
        by lobby_refresh, at most once per LOBBY_INTERVAL_SECONDS)."""
        self._lobby_counter += 1
        if self._every_lobby:
            lobby_subscribers = [s for group in self.lobbies.values() for s in group]
        else:
            lobby_subscribers = [
                s for pk in self._lobby_users for s in self.lobbies.get(pk, ())
            ]
        self._lobby_users.clear()
        self._every_lobby = False
        for subscriber in lobby_subscribers:
            subscriber.notify(self._lobby_counter)

    def deliver_payload(self, payload: str | bytes) -> None:
        try:
            changes = decode(payload)
        except (ValueError, TypeError, KeyError):
            logger.warning("ignored live payload %r", payload[:100])
            return
        for change in changes:
            self.deliver(change)

    def deliver_threadsafe(self, change: Change | AccountChanged) -> None:
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.deliver, change)

    def _catch_up(self, versions: dict[int, int]) -> None:
        self._recheck_everyone()
        for game_id, version in versions.items():
            for subscriber in self.games.get(game_id, ()):
                subscriber.notify(version)
        self._every_lobby = True
        self.lobby_refresh.flush_soon()

    async def resync(self) -> None:
        """Wake every stream with the current version of its game, read from
        the database: what was sent before the listener listened."""
        metrics.LIVE_RESYNCS.inc()
        self._catch_up(await asyncio.to_thread(current_versions, [*self.games]))


def _discard(table: dict, key: int | str, subscriber: Subscriber) -> None:
    subscribers = table.get(key)
    if subscribers is not None:
        subscribers.discard(subscriber)
        if not subscribers:
            del table[key]


hub = Hub()
