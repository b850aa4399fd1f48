"""Live updates: who must hear that a game changed, and how the news travels.

Every change to a game (create, join, move, forfeit, end) is published once, from
the game's signals (games.signals, after commit). A `Change` names the game, its
new version and whose lobbies care. The `Hub` of each server process keeps, per
open stream, only the latest version (bounded memory), and wakes the streams that
care.

Between processes the news travels through Redis pub/sub when REDIS_URL is set
(several hosts, any database), else through PostgreSQL's LISTEN/NOTIFY. Both
servers queue the news for a busy listener (it reads late, never loses it), and
a listener that lost its connection resyncs from the database once it is back.
The Redis channel is named after a token stored in the database (SiteIdentity),
so every host that shares the database shares the channel, however it spells
DATABASE_URL.
With a SQLite file (all processes on one host) it travels as datagrams to a Unix
socket per process, in a directory named after the database file inside the
private cache directory (settings.CACHE_DIR/live/,
tictactoe_site.lib.private_dirs); with an in-memory database (tests: one
process) the hub is told directly.

The same brokers carry `AccountChanged`: a user logged out, changed password,
was deactivated or deleted (Django's signals and the user model's, whoever
made the change). Each hub then re-checks, in a thread, the sessions its open
streams of that user were opened with, and ends those that no longer log them in.

Datagrams are never dropped while their receiver lives. Linux queues only
`net.unix.max_dgram_qlen` datagrams on a socket, so a receiver whose event loop
is behind (stopped, starved of CPU) refuses more for a while. The `Postman` then
keeps a backlog per destination, coalesced by game (only a game's latest version
matters, so the backlog is bounded by the number of games that changed), and a
retry thread sends it, many changes per datagram, until the receiver takes it or
its socket is gone (the process ended: its streams reconnect elsewhere and catch
up from `Last-Event-ID`). Only a sender that dies with a backlog loses news.

Redis or PostgreSQL may go away. Each process then logs one line when a service
goes and one when it is back (`Outage`), not one per request or retry; its
listener tries again at least once a second; a move made meanwhile stands, and
the publisher keeps its news for later (`RedisPublisher`) without holding up
the request. When the service is back every listener resyncs, so every stream
catches up about a second later.
"""

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import secrets
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models.signals import post_delete, post_init, post_save
from django.dispatch import receiver

from tictactoe_site import metrics
from tictactoe_site.lib import private_dirs

from . import signals, stream_sessions
from .models import Game, GameStatus, SiteIdentity

logger = logging.getLogger("games.live")

CHANNEL = "games_live"


@dataclass(frozen=True, slots=True)
class Change:
    game_id: int
    version: int
    player_ids: tuple[int, ...]
    # True when the list of open games changed (a game opened or was joined).
    open_games: bool = False

    @property
    def key(self) -> int:
        """What a backlog keeps one of: a game's latest change."""
        return self.game_id

    def merged(self, older: "Change | None") -> "Change":
        """One change that says what both say: the newer version, every lobby."""
        if older is None:
            return self
        return Change(
            self.game_id,
            max(self.version, older.version),
            tuple(sorted({*self.player_ids, *older.player_ids})),
            self.open_games or older.open_games,
        )

    def wire(self) -> list:
        return [self.game_id, self.version, list(self.player_ids), self.open_games]


@dataclass(frozen=True, slots=True)
class AccountChanged:
    """A user's sessions may have ended: their open streams must re-check them."""

    user_id: int

    @property
    def key(self) -> tuple[str, int]:
        return ("account", self.user_id)

    def merged(self, older: "AccountChanged | None") -> "AccountChanged":
        return self

    def wire(self) -> dict:
        return {"account": self.user_id}


def encode(items: list[Change | AccountChanged]) -> str:
    """The wire format of every broker: a JSON list of changes, each a list,
    and of account notices, each {"account": user id}."""
    return json.dumps([item.wire() for item in items])


def decode(text: str | bytes) -> list[Change | AccountChanged]:
    """What a payload says; ValueError/TypeError/KeyError when it is not one."""
    items = []
    for item in json.loads(text):
        if isinstance(item, dict):
            items.append(AccountChanged(int(item["account"])))
            continue
        game_id, version, players, is_open = item
        items.append(
            Change(int(game_id), int(version), tuple(map(int, players)), bool(is_open))
        )
    return items


def uses_postgres() -> bool:
    return connection.vendor == "postgresql"


def socket_directory() -> Path | None:
    """Where the processes sharing this SQLite file meet; None when in memory."""
    if connection.vendor != "sqlite":
        return None
    return _socket_directory(settings.CACHE_DIR, str(connection.settings_dict["NAME"]))


@functools.cache
def _socket_directory(cache_dir: Path, name: str) -> Path | None:
    """Computed once per database name: every move's publish asks. One
    directory per database file, so that sites sharing a cache directory (test
    runs) do not hear each other; short, for the sockets' paths (below)."""
    if name == ":memory:" or "mode=memory" in name:
        return None
    digest = hashlib.sha256(str(Path(name).resolve()).encode()).hexdigest()[:8]
    return Path(cache_dir) / "live" / digest


def socket_name() -> str:
    """This process's socket in the socket directory: random, not the pid, which
    processes in other pid namespaces (containers) sharing the directory reuse."""
    return f"{secrets.token_hex(4)}.sock"


# A Unix socket's path (sun_path) holds at most 108 bytes with its terminating
# NUL: the cache directory may be 107 - len("/live/01234567/01234567.sock") = 79.
LONGEST_SOCKET_PATH = 107
LONGEST_SOCKET_NAME = len("01234567.sock")


class Postman:
    """Datagrams to every process's socket, kept and retried until taken."""

    RETRY_SECONDS = 0.02
    CHANGES_PER_DATAGRAM = 200  # ~10 KB: far below the socket's send buffer

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # path -> key (a game, an account) -> the latest change of it
        self._backlog: dict[str, dict] = {}
        self._pending = threading.Event()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def send(self, directory: Path, change: Change | AccountChanged) -> None:
        with self._lock:
            for path in directory.glob("*.sock"):
                waiting = self._backlog.get(str(path))
                if waiting is not None:  # keep the order: after what waits
                    waiting[change.key] = change.merged(waiting.get(change.key))
                    continue
                waiting = {change.key: change}
                if not self._flush(str(path), waiting):
                    self._backlog[str(path)] = waiting
            if self._backlog:
                self._start_retrying()

    def _flush(self, path: str, waiting: dict) -> bool:
        """Send what waits for `path`; True when nothing is left to send."""
        if self._socket is None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._socket.setblocking(False)
        while waiting:
            batch = list(waiting.values())[: self.CHANGES_PER_DATAGRAM]
            try:
                self._socket.sendto(encode(batch).encode(), path)
            except BlockingIOError:
                return False  # the receiver's queue is full: retry later
            except (ConnectionRefusedError, FileNotFoundError):
                Path(path).unlink(missing_ok=True)  # its process is gone
                waiting.clear()
                return True
            except OSError:
                logger.warning("live update to %s delayed", path, exc_info=True)
                return False
            for change in batch:
                del waiting[change.key]
        return True

    def _start_retrying(self) -> None:
        self._pending.set()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._retry, name="live-postman", daemon=True
            )
            self._thread.start()

    def _retry(self) -> None:
        while True:
            self._pending.wait()
            time.sleep(self.RETRY_SECONDS)  # give the receivers time to read
            with self._lock:
                for path, waiting in list(self._backlog.items()):
                    if self._flush(path, waiting):
                        del self._backlog[path]
                if not self._backlog:
                    self._pending.clear()


postman = Postman()


# Redis and PostgreSQL may go away ------------------------------------------------

# How long a process waits on Redis before it counts it gone: never longer per
# request (a move stands whatever happens to its news).
REDIS_TIMEOUT_SECONDS = 1.0
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


def redis_service(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "unix":
        return f"Redis at {parts.path}"
    return f"Redis at {parts.hostname}:{parts.port or 6379}"


def database_service() -> str:
    if connection.vendor != "postgresql":
        return "the database"
    host = connection.settings_dict["HOST"] or "its local socket"
    return f"PostgreSQL at {host}:{connection.settings_dict['PORT'] or 5432}"


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
def _redis_publisher(url: str, channel: str) -> RedisPublisher:
    return RedisPublisher(url, channel)  # thread-safe: a pool of connections


def publish(change: Change | AccountChanged) -> None:
    """Tell every server process. Runs in the request's thread, after commit."""
    if settings.REDIS_URL:
        _redis_publisher(settings.REDIS_URL, redis_channel()).publish(change)
        return
    if uses_postgres():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, encode([change])])
        return
    directory = socket_directory()
    if directory is not None and directory.is_dir():
        postman.send(directory, change)
    else:
        hub.deliver_threadsafe(change)


def _change_for(game: Game, *, open_games: bool = False) -> Change:
    players = tuple(pk for pk in {game.player_x_id, game.player_o_id} if pk is not None)
    return Change(game.pk, game.version, players, open_games)


@receiver(signals.game_created, dispatch_uid="live_game_created")
def publish_game_created(sender, *, game, **kwargs):
    publish(_change_for(game, open_games=game.is_waiting))
    if game.rematch_of_id is not None:
        # The finished game's page now links to its rematch (services bumped
        # its version): its viewers must hear about it too.
        old = Game.objects.only("version", "player_x", "player_o").get(
            pk=game.rematch_of_id
        )
        publish(_change_for(old))


@receiver(signals.game_joined, dispatch_uid="live_game_joined")
def publish_game_joined(sender, *, game, **kwargs):
    publish(_change_for(game, open_games=True))


@receiver(signals.move_made, dispatch_uid="live_move_made")
def publish_move_made(sender, *, game, **kwargs):
    publish(_change_for(game))


@receiver(signals.names_changed, dispatch_uid="live_names_changed")
def publish_names_changed(sender, *, game, **kwargs):
    publish(_change_for(game))


# A game that ends by a move was published by move_made already.
ENDED_BY_A_MOVE = frozenset({GameStatus.X_WON, GameStatus.O_WON, GameStatus.DRAW})


@receiver(signals.game_ended, dispatch_uid="live_game_ended")
def publish_game_ended_without_a_move(sender, *, game, status, **kwargs):
    # An aborted game with a free side was an open game: the open-games lists
    # change too.
    if status not in ENDED_BY_A_MOVE:
        publish(
            _change_for(game, open_games=None in (game.player_x_id, game.player_o_id))
        )


# Accounts --------------------------------------------------------------------


def _account_changed(user_id: int, using: str | None = None) -> None:
    transaction.on_commit(lambda: publish(AccountChanged(user_id)), using=using)


@receiver(user_logged_out, dispatch_uid="live_user_logged_out")
def end_the_streams_of_a_session_logged_out(sender, *, request, user, **kwargs):
    if user is None or user.pk is None:
        return
    # logout() sends this signal before it deletes the session: delete it now
    # (logout then finds it gone), so that the processes re-checking the user's
    # streams at once already find the session gone.
    request.session.delete()
    _account_changed(user.pk)


# A user's session auth hash comes from their password; an inactive user is
# logged out. A field deferred when the user was loaded reads as None.
ACCOUNT_FIELDS = ("password", "is_active")


def _account_state(user) -> tuple:
    return tuple(user.__dict__.get(name) for name in ACCOUNT_FIELDS)


@receiver(post_init, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_init")
def remember_the_account_state(sender, instance, **kwargs):
    """What a later save compares with (no query: only what was loaded)."""
    instance._live_account_state = _account_state(instance)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_saved")
def end_the_streams_of_a_changed_account(
    sender, instance, created, raw, using, update_fields, **kwargs
):
    """A changed password or is_active, however saved (our pages, the admin,
    allauth, the shell): the user's streams re-check their sessions."""
    if update_fields is not None and not set(ACCOUNT_FIELDS) & set(update_fields):
        return  # e.g. last_login, at every login
    state = _account_state(instance)
    changed = state != getattr(instance, "_live_account_state", None)
    instance._live_account_state = state
    if changed and not (created or raw):
        _account_changed(instance.pk, using)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_gone")
def end_the_streams_of_a_deleted_account(sender, instance, using, **kwargs):
    _account_changed(instance.pk, using)


# The keep-alive ping: every stream gets one each KEEPALIVE_SECONDS, from one
# ticker per process that pings a slice of the streams at a time (no timer per
# stream, and no burst of every ping at once).
KEEPALIVE_SECONDS = 15.0
KEEPALIVE_SLICES = 15


class Subscriber:
    """One open stream: the latest news it has not sent yet, and a wake-up."""

    __slots__ = (
        "_event",
        "pending",
        "fresh",
        "ping_due",
        "closed",
        "slice",
        "user_id",
        "session_key",
    )

    def __init__(self, slice_: int = 0) -> None:
        self._event = asyncio.Event()
        self.pending = 0  # the newest version (or a counter) not yet sent
        self.fresh = False  # news arrived since the last wake-up
        self.ping_due = False
        self.closed = False
        self.slice = slice_
        # Whose stream it is, once admitted (Hub.admit).
        self.user_id: int | None = None
        self.session_key: str | None = None

    def notify(self, version: int) -> None:
        if version > self.pending:
            self.pending = version
        self.fresh = True
        self._event.set()

    def ping(self) -> None:
        self.ping_due = True
        self._event.set()

    def close(self) -> None:
        self.closed = True
        self._event.set()

    async def wait(self) -> tuple[bool, bool]:
        """Until news, a ping or the end: (news arrived, a ping is due)."""
        await self._event.wait()
        self._event.clear()
        woke = self.fresh, self.ping_due
        self.fresh = self.ping_due = False
        return woke


# Lobby news reaches this process's lobby streams at most once a second
# (Coalescer): one user creating and aborting open games over and over costs
# each lobby at most one re-render a second, and the hub one pass over the
# lobbies a second rather than one per change.
LOBBY_INTERVAL_SECONDS = 1.0


class Coalescer:
    """Calls `flush` at most once per `interval` seconds: news after a quiet
    interval at once (the leading edge), news within the interval in one call
    at its end (the trailing edge, so the last news always arrives). `clock`
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

    def news(self) -> None:
        if self._handle is not None:
            return  # the trailing flush takes this news too
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
        """Forget the news waiting for a trailing flush (the hub stops)."""
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
        # The lobbies that news since the last delivery concerns: these users',
        # or every lobby when the open games changed.
        self._lobby_users: set[int] = set()
        self._every_lobby = False
        self.lobby_news = Coalescer(
            LOBBY_INTERVAL_SECONDS,
            self._deliver_lobby_news,
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
            self._listener = asyncio.create_task(self._listen_redis(settings.REDIS_URL))
        elif uses_postgres():
            self._listener = asyncio.create_task(self._listen_postgres())
        elif (directory := socket_directory()) is not None:
            self._socket_path = directory / socket_name()
            self._listener = asyncio.create_task(self._listen_datagrams(directory))
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
        self.lobby_news.cancel()
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
        sessions = {s.session_key: s.user_id for s in subscribers}
        try:
            lapsed = await asyncio.to_thread(stream_sessions.lapsed, sessions)
        except Exception:
            if not end_if_unsure:
                logger.warning("live streams' sessions not re-checked", exc_info=True)
                return
            logger.warning("live streams' sessions not re-checked; ending them")
            lapsed = set(sessions)
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
        self.lobby_news.news()

    def _call_later(self, delay: float, callback) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def _deliver_lobby_news(self) -> None:
        """Wake the lobbies the news since the last delivery concerns (called
        by lobby_news, at most once per LOBBY_INTERVAL_SECONDS)."""
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
        self.lobby_news.news()

    async def _listen_postgres(self) -> None:
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
                    await self._resync()
                    database.back()
                    self.listening.set()
                    delay = RECONNECT_FIRST_SECONDS
                    since = time.monotonic()
                    async for notify in conn.notifies():
                        self.deliver_payload(notify.payload)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, DatabaseError) as exc:
                database.lost(exc, since=since)
            except Exception:
                logger.exception("live listener failed; retrying")
            self.listening.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_SECONDS)

    async def _listen_redis(self, url: str) -> None:
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
                    await self._resync()
                    database.back()
                    self.listening.set()
                    delay = RECONNECT_FIRST_SECONDS
                    since = time.monotonic()
                    async for message in pubsub.listen():
                        if message["type"] == "message":
                            self.deliver_payload(message["data"])
            except asyncio.CancelledError:
                raise
            except (redis.RedisError, OSError) as exc:
                server.lost(exc, since=since)
            except DatabaseError as exc:
                database.lost(exc, since=since)
            except Exception:
                logger.exception("live listener failed; retrying")
            self.listening.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_SECONDS)

    async def _listen_datagrams(self, directory: Path) -> None:
        hub = self

        class Receiver(asyncio.DatagramProtocol):
            def datagram_received(self, data, addr):
                hub.deliver_payload(data)

        private_dirs.make(directory)
        if found := private_dirs.problems(directory, root=settings.CACHE_DIR):
            raise PermissionError(f"not a private directory: {'; '.join(found)}")
        # Bound here: uvloop takes a ready socket but not a Unix local_addr.
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(self._socket_path))
        sock.setblocking(False)
        self._datagrams, _ = await self.loop.create_datagram_endpoint(
            Receiver, sock=sock
        )
        self.listening.set()

    async def _resync(self) -> None:
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


def _channel_from_database() -> str:
    """The Redis channel (in a thread: the ORM is synchronous)."""
    close_old_connections()
    try:
        return redis_channel()
    finally:
        close_old_connections()


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("live updates cannot listen", exc_info=task.exception())


def _listener_params() -> dict:
    """libpq parameters of the default database, for the listening connection."""
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return params


hub = Hub()
