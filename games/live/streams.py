"""Server-Sent Events streams, served as plain ASGI next to the Django pages.

A stream never renders anything: it tells the browser the game's new version
(the SSE event id), and the browser fetches the server-rendered partial for its
viewer. So a stream carries nothing that lets a client act as a player, and the
rules and templates live only on the server.

Each connection authenticates once, from the session cookie, with Django's own
session engine and `auth.get_user` (in a thread: they are synchronous). While
open it costs one small object in the hub, no database query, no thread and no
timer; a `ping` event every 15 s (from the hub's one ticker) keeps proxies awake
and lets the page's script notice a dead connection (comment lines would be
invisible to it). See games.live for how changes reach the hub.

Reached from tictactoe_site.server.asgi (`route`), before Django: the `…/events/`
entries of games.urls are placeholders that give `{% url %}` the addresses.

A stream ends when its session does: when the user logs out, changes password,
or is deactivated or deleted, every process hears it (games.live) and ends the
streams whose session no longer logs them in; the browser reconnects and is
refused as a page would be. One user may hold at most WEB_MAX_STREAMS_PER_USER
streams per process (each holds a file descriptor); more get a 429. A visitor
not logged in may watch a started public game; their streams count by network,
at most WEB_MAX_STREAMS_PER_ADDRESS per process.
"""

import asyncio
import contextvars
import ipaddress
import random
import re
import threading
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http.cookie import parse_cookie
from django.http.request import split_domain_port, validate_host

from accounts.client import forwarded_ip
from games.models import Game
from tictactoe_site.lib.error_pages import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from tictactoe_site.ops import logs, metrics

from .hub import Subscriber, hub
from .sessions import logged_in_user

# The same paths as the <int:game_id> URL pattern, so that every stream request
# reaches a stream handler; an id too long for the database names no game (0).
GAME_STREAM = re.compile(r"/games/([0-9]+)/events/")
LONGEST_ID = 18
LOBBY_STREAM = "/lobby/events/"

# Each stream asks its browser to reconnect after its own delay in this range,
# so that a restart is followed by a spread of reconnects, not a stampede.
RETRY_MILLISECONDS = (1000, 5000)

STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
    (b"x-content-type-options", b"nosniff"),
]


class StreamRoute(NamedTuple):
    handler: Callable[..., Awaitable[None]]
    name: str  # its placeholder's URL name in games.urls, for logs and metrics


def route(path: str) -> StreamRoute | None:
    """The stream handler for `path` and its route's name, or None when Django
    serves it."""
    if path == LOBBY_STREAM:
        return StreamRoute(lobby_stream, "lobby_events")
    match = GAME_STREAM.fullmatch(path)
    if match is not None:
        game_id = int(match[1]) if len(match[1]) <= LONGEST_ID else 0

        async def game(scope, receive, send):
            await game_stream(scope, receive, send, game_id)

        return StreamRoute(game, "game_events")
    return None


def _header(scope, name: bytes) -> str:
    values = [value for key, value in scope["headers"] if key == name]
    return (b"; " if name == b"cookie" else b",").join(values).decode("latin-1")


def _allowed_hosts() -> list[str]:
    hosts = settings.ALLOWED_HOSTS
    if settings.DEBUG and not hosts:
        return [".localhost", "127.0.0.1", "[::1]"]
    return hosts


async def _refuse(send, status: int, message: str, headers=()) -> None:
    metrics.STREAM_ANSWERS.labels(str(status)).inc()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"cache-control", b"no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": message.encode()})


async def _bad_request(scope, send) -> bool:
    """Refuse a wrong method or host the way Django would; True if refused."""
    if scope["method"] not in ("GET", "HEAD"):
        await _refuse(
            send,
            405,
            "This address only accepts GET and HEAD requests.",
            [(b"allow", b"GET, HEAD")],
        )
        return True
    domain, _port = split_domain_port(_header(scope, b"host"))
    if not domain or not validate_host(domain, _allowed_hosts()):
        await _refuse(send, 400, "Bad request: unknown host.")
        return True
    return False


class Viewer(NamedTuple):
    user_id: int | None  # None: the session logs nobody in
    session_key: str | None
    version: int | None  # of the game asked for; None: no such game


def _viewer(cookie_header: str, game_id: int | None) -> Viewer:
    """The session and user are read as Django's middleware would; the game is
    the game page's own read (Game.objects.for_page: one statement written out,
    a tenth of the CPU of the same query built by the ORM, which made a
    reconnect wave hold up the pages), None for a game the user may not see,
    as for one that does not exist; a visitor sees only a started one."""
    close_old_connections()
    try:
        session_key = parse_cookie(cookie_header).get(settings.SESSION_COOKIE_NAME)
        user = logged_in_user(session_key)
        user_id = user.pk if user.is_authenticated else None
        if user_id is None:
            session_key = None
            if game_id is None:
                return Viewer(None, None, None)
        version = None if game_id is None else _version_shown(game_id, user)
        return Viewer(user_id, session_key, version)
    finally:
        close_old_connections()


def _version_shown(game_id: int, user) -> int | None:
    """The game's version, read as its page reads it for `user`; None for a game
    the page would not show them, and for a visitor a game not started yet."""
    try:
        game = Game.objects.for_page(game_id, user)
    except Game.DoesNotExist:
        return None
    if game.hidden_from_visitor(user):
        return None
    return game.version


# Each thread that checks streams keeps one context from one check to the next,
# as a page thread does: Django keeps its caches (the session cache's among them)
# per context and thread, and built them again for every stream in the fresh
# copy `asyncio.to_thread` runs in (a fifth of a check's CPU). A line logged
# during a check names no request.
_check_contexts = threading.local()


def _in_thread_context(function, *args):
    context = getattr(_check_contexts, "context", None)
    if context is None:
        context = _check_contexts.context = contextvars.Context()
    return context.run(function, *args)


async def _identify(scope, send, game_id: int | None) -> Viewer | None:
    """`_viewer` in a thread; None, after a 503 like the pages'
    (tictactoe_site.lib.error_pages), while the database cannot be reached."""
    cookie = _header(scope, b"cookie")
    try:
        viewer = await asyncio.get_running_loop().run_in_executor(
            None, _in_thread_context, _viewer, cookie, game_id
        )
    except (OperationalError, InterfaceError):
        retry_after = str(RETRY_AFTER_SECONDS).encode()
        await _refuse(send, 503, DATABASE_UNAVAILABLE, [(b"retry-after", retry_after)])
        return None
    logs.note_user(viewer.user_id)  # for the stream's log lines
    return viewer


TOO_MANY_STREAMS = (
    "Too many live pages are open for this account. Close some game or lobby "
    "tabs, then reload this page."
)


async def _admitted(
    send, subscriber: Subscriber, viewer: Viewer, notices: int, route: str
):
    """Record the stream as the viewer's; False, after a 429, past the limit.
    `notices`: hub.account_notices before the session was read: a notice heard
    since may concern that session, so it is re-checked. `route`: the stream's
    route name, for the refusal's count (tictactoe_site.ops.metrics)."""
    if not hub.admit(subscriber, viewer.user_id, viewer.session_key):
        metrics.RATE_LIMITED.labels(route).inc()
        await _refuse(send, 429, TOO_MANY_STREAMS)
        return False
    if hub.account_notices != notices:
        hub.recheck_user(viewer.user_id)
    return True


TOO_MANY_VISITOR_STREAMS = (
    "Too many live pages are open from your network. Close some game tabs, "
    "or log in, then reload this page."
)


def _network(scope) -> str:
    """Whose visitor streams these are: the client's address (as the pages
    decide it: accounts.client), an IPv6 one by its /64 (one host's share)."""
    peer = scope.get("client") or ("", 0)
    address = forwarded_ip(peer[0], _header(scope, b"x-forwarded-for")) or "unknown"
    if ":" in address:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return address


async def _visitor_admitted(send, subscriber: Subscriber, scope) -> bool:
    """Record a visitor's stream as its network's; False, after a 429, past
    WEB_MAX_STREAMS_PER_ADDRESS."""
    if not hub.admit_visitor(subscriber, _network(scope)):
        metrics.RATE_LIMITED.labels("game_events").inc()
        await _refuse(send, 429, TOO_MANY_VISITOR_STREAMS)
        return False
    return True


# A version the client sends: plain ASCII digits, no sign, at most nine of them.
VERSION = re.compile(r"[0-9]{1,9}")


class BadVersion(ValueError):
    message = "Bad request: Last-Event-ID and v must be a game version (digits)."


def _last_seen(scope) -> int | None:
    """The version the client already shows: Last-Event-ID on an automatic
    reconnect, else `?v=` from the page; None when it sent neither."""
    value = _header(scope, b"last-event-id")
    if not value:
        query = scope.get("query_string", b"").decode("latin-1")
        for part in query.split("&"):
            key, _, raw = part.partition("=")
            if key == "v":
                value = raw
    if not value:
        return None
    if VERSION.fullmatch(value) is None:
        raise BadVersion()
    return int(value)


def _event(data: str, *, event: str | None = None, event_id: int | None = None):
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode()


PING = _event("", event="ping")


async def _open(send, scope) -> bool:
    """Send the stream's headers and first line; False for HEAD (no body)."""
    metrics.STREAM_ANSWERS.labels("200").inc()
    await send(
        {"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS}
    )
    if scope["method"] == "HEAD":
        await send({"type": "http.response.body", "body": b""})
        return False
    await send(
        {
            "type": "http.response.body",
            "body": f"retry: {random.randint(*RETRY_MILLISECONDS)}\n\n".encode(),
            "more_body": True,
        }
    )
    return True


async def _watch_disconnect(receive, subscriber: Subscriber) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            subscriber.close()
            return


async def _pump(receive, send, subscriber: Subscriber, next_event, kind: str):
    """Until the client leaves or the server shuts down: on a change, send what
    `next_event()` returns; else ping. `kind` ("game", "lobby") labels the stream's
    counts (tictactoe_site.ops.metrics)."""
    watcher = asyncio.create_task(_watch_disconnect(receive, subscriber))
    events = metrics.LIVE_EVENTS.labels(kind)
    metrics.STREAMS.labels(kind).inc()
    try:
        while True:
            changed, ping_due = await subscriber.wait()
            if subscriber.closed:
                # End the response properly (ignored when the client has left),
                # so that the server closes the connection without an error.
                await send({"type": "http.response.body", "body": b""})
                return
            body = next_event() if changed else None
            if body is not None:
                events.inc()
            elif ping_due:
                body = PING
            if body:
                await send(
                    {"type": "http.response.body", "body": body, "more_body": True}
                )
    except OSError:
        return
    finally:
        metrics.STREAMS.labels(kind).dec()
        watcher.cancel()


async def game_stream(scope, receive, send, game_id: int) -> None:
    """`id:` and `data:` are the game's version, sent whenever it changes."""
    if await _bad_request(scope, send):
        return
    try:
        sent = _last_seen(scope)
    except BadVersion as error:
        await _refuse(send, 400, error.message)
        return
    # Subscribe before reading the version, so that no change falls in between.
    subscriber = hub.subscribe_game(game_id)
    try:
        notices = hub.account_notices
        viewer = await _identify(scope, send, game_id)
        if viewer is None:
            return
        version = viewer.version
        if viewer.user_id is None:
            # A visitor watches a started public game; anything else, as before.
            if version is None:
                await _refuse(send, 403, "Log in to watch games.")
                return
            if not await _visitor_admitted(send, subscriber, scope):
                return
        elif version is None:
            await _refuse(send, 404, "There is no such game.")
            return
        elif not await _admitted(send, subscriber, viewer, notices, "game_events"):
            return
        if not await _open(send, scope):
            return
        if version != sent:
            metrics.LIVE_EVENTS.labels("game").inc()
            await send(
                {
                    "type": "http.response.body",
                    "body": _event(str(version), event_id=version),
                    "more_body": True,
                }
            )
            sent = version

        def next_event() -> bytes | None:
            nonlocal sent
            latest = subscriber.pending
            if sent is not None and latest <= sent:
                return None
            sent = latest
            return _event(str(latest), event_id=latest)

        await _pump(receive, send, subscriber, next_event, "game")
    finally:
        hub.unsubscribe(game_id, subscriber)


async def lobby_stream(scope, receive, send) -> None:
    """`data: refresh` when one of the viewer's games or the open games change;
    at most one a second, however busy the site is (the hub refreshes lobbies
    at most once per LOBBY_INTERVAL_SECONDS: games.live.subscribers.Coalescer)."""
    if await _bad_request(scope, send):
        return
    notices = hub.account_notices
    viewer = await _identify(scope, send, None)
    if viewer is None:
        return
    user_id = viewer.user_id
    if user_id is None:
        await _refuse(send, 403, "Log in to see your lobby.")
        return
    subscriber = hub.subscribe_lobby(user_id)
    try:
        if not await _admitted(send, subscriber, viewer, notices, "lobby_events"):
            return
        if not await _open(send, scope):
            return
        await _pump(
            receive,
            send,
            subscriber,
            lambda: _event("refresh", event="lobby"),
            "lobby",
        )
    finally:
        hub.unsubscribe(user_id, subscriber, lobby=True)
