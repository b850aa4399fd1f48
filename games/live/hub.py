"""The `Hub` of each server process: its open streams, by game and by lobby
user. It keeps, per open stream, only the latest version (a `Subscriber`:
bounded memory), wakes the streams a change concerns, and the lobbies at most
once a second (`Coalescer`). It listens to the broker in use
(games.live.brokers) from the server's event loop; it ends the streams of a
user whose sessions may have ended (an AccountChanged notice) once their
sessions, re-checked in a thread (games.live.sessions), no longer log them in.
"""

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections

from games.models import Game
from tictactoe_site.ops import metrics

from . import sessions
from .brokers import datagrams, postgres_notify, redis_pubsub
from .changes import AccountChanged, Change
from .wire import decode

logger = logging.getLogger("games.live")


# The keep-alive ping: every stream gets one each KEEPALIVE_SECONDS, from one
# ticker per process that pings a slice of the streams at a time (no timer per
# stream, and no burst of every ping at once).
KEEPALIVE_SECONDS = 15.0
KEEPALIVE_SLICES = 15


class Subscriber:
    """One open stream: the latest version (or lobby refresh count) it has not
    sent yet, and a wake-up."""

    __slots__ = (
        "_event",
        "pending",
        "changed",
        "ping_due",
        "closed",
        "slice",
        "user_id",
        "session_key",
    )

    def __init__(self, slice_: int = 0) -> None:
        self._event = asyncio.Event()
        self.pending = 0  # the newest version (or a counter) not yet sent
        self.changed = False  # a change arrived since the last wake-up
        self.ping_due = False
        self.closed = False
        self.slice = slice_
        # Whose stream it is, once admitted (Hub.admit).
        self.user_id: int | None = None
        self.session_key: str | None = None

    def notify(self, version: int) -> None:
        if version > self.pending:
            self.pending = version
        self.changed = True
        self._event.set()

    def ping(self) -> None:
        self.ping_due = True
        self._event.set()

    def close(self) -> None:
        self.closed = True
        self._event.set()

    async def wait(self) -> tuple[bool, bool]:
        """Until a change, a ping or the end: (a change arrived, a ping is due)."""
        await self._event.wait()
        self._event.clear()
        woke = self.changed, self.ping_due
        self.changed = self.ping_due = False
        return woke


# Lobby refreshes reach this process's lobby streams at most once a second
# (Coalescer): one user creating and aborting open games over and over costs
# each lobby at most one re-render a second, and the hub one pass over the
# lobbies a second rather than one per change.
LOBBY_INTERVAL_SECONDS = 1.0


class Coalescer:
    """Calls `flush` at most once per `interval` seconds: asked after a quiet
    interval, at once (the leading edge); asked within the interval, once at
    its end (the trailing edge, so the last change always arrives). `clock`
    tells the time in seconds; `schedule(delay, callback)` calls `callback`
    after `delay` seconds and returns a handle with cancel() (the event loop's
    call_later). Runs on one thread: the event loop's."""

    def __init__(self, interval: float, flush, *, clock, schedule) -> None:
        self.interval = interval
        self._flush = flush
        self._clock = clock
        self._schedule = schedule
        self._last: float | None = None  # when flush was last called
        self._handle = None  # the trailing flush, while one is due

    def flush_soon(self) -> None:
        if self._handle is not None:
            return  # the trailing flush covers this call too
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._run(now)
        else:
            self._handle = self._schedule(
                self._last + self.interval - now, self._trailing
            )

    def _trailing(self) -> None:
        self._handle = None
        self._run(self._clock())

    def _run(self, now: float) -> None:
        self._last = now
        self._flush()

    def cancel(self) -> None:
        """Forget the trailing flush due (the hub stops)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._last = None


class Hub:
    """The streams of this process, by game and by lobby user."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.games: dict[int, set[Subscriber]] = {}
        self.lobbies: dict[int, set[Subscriber]] = {}
        self.users: dict[int, set[Subscriber]] = {}  # every admitted stream
        # Account notices heard so far: a stream compares it before and after
        # reading its session, so that a notice in between is not missed.
        self.account_notices = 0
        self._rechecks: set[asyncio.Task] = set()
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
        self._listener: asyncio.Task | None = None
        self._datagrams: asyncio.DatagramTransport | None = None
        self._socket_path: Path | None = None

    # Life cycle (ASGI lifespan) -------------------------------------------------

    def start(self) -> None:
        """Bind to the running event loop and start listening to the broker."""
        self.loop = asyncio.get_running_loop()
        self.accepting = True
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._keep_alive())
        if self._datagrams is not None or (
            self._listener is not None and not self._listener.done()
        ):
            return  # listening already
        # Set while every change published from now on reaches this hub.
        self.listening = asyncio.Event()
        if settings.REDIS_URL:
            self._listener = asyncio.create_task(
                redis_pubsub.listen(self, settings.REDIS_URL)
            )
        elif postgres_notify.in_use():
            self._listener = asyncio.create_task(postgres_notify.listen(self))
        elif (directory := datagrams.socket_directory()) is not None:
            self._socket_path = directory / datagrams.socket_name()
            self._listener = asyncio.create_task(self._listen_datagrams())
            self._listener.add_done_callback(_log_failure)
        else:
            self.listening.set()  # in memory: publish tells this hub directly

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._listener is not None:
            self._listener.cancel()
            self._listener = None
        if self._datagrams is not None:
            self._datagrams.close()
            self._datagrams = None
        if self._socket_path is not None:
            self._socket_path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the last process out tidies up
                self._socket_path.parent.rmdir()
            self._socket_path = None
        self.close_streams()
        for task in self._rechecks:
            task.cancel()
        self.lobby_refresh.cancel()
        self._lobby_users.clear()
        self._every_lobby = False
        self.games.clear()
        self.lobbies.clear()
        self.users.clear()
        for subscribers in self.slices:
            subscribers.clear()
        self.loop = None

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

    def unsubscribe(self, key: int, subscriber: Subscriber, *, lobby=False) -> None:
        table = self.lobbies if lobby else self.games
        self.slices[subscriber.slice].discard(subscriber)
        _discard(table, key, subscriber)
        if subscriber.user_id is not None:
            _discard(self.users, subscriber.user_id, subscriber)

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
            self._recheck(list(subscribers), end_if_unsure=True)

    def _recheck(self, subscribers: list[Subscriber], *, end_if_unsure: bool) -> None:
        task = asyncio.create_task(self._end_lapsed(subscribers, end_if_unsure))
        self._rechecks.add(task)
        task.add_done_callback(self._rechecks.discard)

    async def _end_lapsed(self, subscribers: list[Subscriber], end_if_unsure: bool):
        """End the streams whose session no longer logs their user in. When
        that cannot be told (the database is away), `end_if_unsure`: end them
        all (the browsers reconnect and are authenticated afresh)."""
        opened_as = {s.session_key: s.user_id for s in subscribers}
        try:
            lapsed = await asyncio.to_thread(sessions.lapsed, opened_as)
        except Exception:
            if not end_if_unsure:
                logger.warning("live streams' sessions not re-checked", exc_info=True)
                return
            logger.warning("live streams' sessions not re-checked; ending them")
            lapsed = set(opened_as)
        for subscriber in subscribers:
            if subscriber.session_key in lapsed:
                subscriber.close()

    def _recheck_everyone(self) -> None:
        """After the broker connection was lost, notices may have been missed:
        a precaution, so a failure ends nothing (the outage ended no session)."""
        subscribers = [s for group in self.users.values() for s in group]
        if subscribers:
            self._recheck(subscribers, end_if_unsure=False)

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

    async def _listen_datagrams(self) -> None:
        self._datagrams = await datagrams.listen(
            self._socket_path, self.deliver_payload
        )
        self.listening.set()

    async def resync(self) -> None:
        """Wake every stream with the current version of its game, read from
        the database: what was sent before the listener listened."""
        metrics.LIVE_RESYNCS.inc()
        self._catch_up(await asyncio.to_thread(_versions, [*self.games]))


def _discard(table: dict, key: int, subscriber: Subscriber) -> None:
    subscribers = table.get(key)
    if subscribers is not None:
        subscribers.discard(subscriber)
        if not subscribers:
            del table[key]


def _versions(game_ids: list[int]) -> dict[int, int]:
    """The current version of each game (in a thread: the ORM is synchronous)."""
    close_old_connections()
    try:
        return dict(Game.objects.filter(pk__in=game_ids).values_list("pk", "version"))
    finally:
        close_old_connections()


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("live updates cannot listen", exc_info=task.exception())


hub = Hub()
