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
"""

import asyncio
import random
import re
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.http.request import split_domain_port, validate_host

from .errors import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS
from .forms import parse_digits
from .live import Subscriber, hub
from .models import Game

# The same paths as the <int:game_id> URL pattern, so that every stream request
# reaches a stream handler; an id too long for the database names no game (0).
GAME_STREAM = re.compile(r"/games/([0-9]+)/events/")
LONGEST_ID = 18
LOBBY_STREAM = "/lobby/events/"

LOBBY_MIN_INTERVAL_SECONDS = 1.0
# Each stream asks its browser to reconnect after its own delay in this range,
# so that a restart is followed by a spread of reconnects, not a stampede.
RETRY_MILLISECONDS = (1000, 5000)

STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
    (b"x-content-type-options", b"nosniff"),
]


def route(path: str):
    """The stream handler for `path`, or None when Django serves it."""
    if path == LOBBY_STREAM:
        return lobby_stream
    match = GAME_STREAM.fullmatch(path)
    if match is not None:
        game_id = int(match[1]) if len(match[1]) <= LONGEST_ID else 0

        async def game(scope, receive, send):
            await game_stream(scope, receive, send, game_id)

        return game
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


def _viewer(cookie_header: str, game_id: int | None) -> tuple[int | None, int | None]:
    """(user id or None, the game's version or None): the session and user are
    read as Django's middleware would; the game costs one small query."""
    close_old_connections()
    try:
        request = HttpRequest()
        session_key = parse_cookie(cookie_header).get(settings.SESSION_COOKIE_NAME)
        engine = import_module(settings.SESSION_ENGINE)
        request.session = engine.SessionStore(session_key)
        user = get_user(request)
        if not user.is_authenticated:
            return None, None
        version = None
        if game_id is not None:
            version = (
                Game.objects.filter(pk=game_id)
                .values_list("version", flat=True)
                .first()
            )
        return user.pk, version
    finally:
        close_old_connections()


async def _identify(scope, send, game_id: int | None):
    """`_viewer` in a thread; None, after a 503 like the pages' (games.errors),
    while the database cannot be reached."""
    try:
        return await asyncio.to_thread(_viewer, _header(scope, b"cookie"), game_id)
    except (OperationalError, InterfaceError):
        retry_after = str(RETRY_AFTER_SECONDS).encode()
        await _refuse(send, 503, DATABASE_UNAVAILABLE, [(b"retry-after", retry_after)])
        return None


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
    version = parse_digits(value, max_digits=9)
    if version is None:
        raise BadVersion()
    return version


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


async def _pump(receive, send, subscriber: Subscriber, news, pause: float = 0.0):
    """Until the client leaves or the server shuts down: on news, send what
    `news()` returns; else ping."""
    watcher = asyncio.create_task(_watch_disconnect(receive, subscriber))
    try:
        while True:
            fresh, ping_due = await subscriber.wait()
            if subscriber.closed:
                # End the response properly (ignored when the client has left),
                # so that the server closes the connection without an error.
                await send({"type": "http.response.body", "body": b""})
                return
            body = news() if fresh else None
            if body is None and ping_due:
                body = PING
            if body:
                await send(
                    {"type": "http.response.body", "body": body, "more_body": True}
                )
                if fresh and pause:
                    await asyncio.sleep(pause)
    except OSError:
        return
    finally:
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
        viewer = await _identify(scope, send, game_id)
        if viewer is None:
            return
        user_id, version = viewer
        if user_id is None:
            await _refuse(send, 403, "Log in to watch games.")
            return
        if version is None:
            await _refuse(send, 404, "There is no such game.")
            return
        if not await _open(send, scope):
            return
        if version != sent:
            await send(
                {
                    "type": "http.response.body",
                    "body": _event(str(version), event_id=version),
                    "more_body": True,
                }
            )
            sent = version

        def news() -> bytes | None:
            nonlocal sent
            latest = subscriber.pending
            if sent is not None and latest <= sent:
                return None
            sent = latest
            return _event(str(latest), event_id=latest)

        await _pump(receive, send, subscriber, news)
    finally:
        hub.unsubscribe(game_id, subscriber)


async def lobby_stream(scope, receive, send) -> None:
    """`data: refresh` when one of the viewer's games or the open games change;
    at most one a second, however busy the site is."""
    if await _bad_request(scope, send):
        return
    viewer = await _identify(scope, send, None)
    if viewer is None:
        return
    user_id, _ = viewer
    if user_id is None:
        await _refuse(send, 403, "Log in to see your lobby.")
        return
    subscriber = hub.subscribe_lobby(user_id)
    try:
        if not await _open(send, scope):
            return
        await _pump(
            receive,
            send,
            subscriber,
            lambda: _event("refresh", event="lobby"),
            pause=LOBBY_MIN_INTERVAL_SECONDS,
        )
    finally:
        hub.unsubscribe(user_id, subscriber, lobby=True)
