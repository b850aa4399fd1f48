"""Live play: the streams, the live partials, and changes crossing processes.

The streams are driven through the ASGI application itself (tictactoe_site.asgi),
as a server would; waits are bounded (asyncio.wait_for / queue timeouts). Nothing
sleeps to synchronise: the two sleeps poll for a server's port under a deadline
and keep a process stopped (SIGSTOP) for a set time. The cross-process test starts
two real server processes on PostgreSQL.
"""

import asyncio
import json
import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from http.client import HTTPConnection
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.urls import reverse

from games import services, streams
from games.live import KEEPALIVE_SLICES, Change, Subscriber, decode, encode, hub
from tictactoe_site.asgi import application

from .support.asgi import http_scope

BOUND = 10.0  # seconds: generous for a loaded CI machine, never slept


@pytest.fixture(autouse=True)
def fresh_hub():
    yield
    hub.stop()


def sessionid(client) -> str:
    return client.cookies["sessionid"].value


class Stream:
    """One request to the ASGI app, read as the browser's EventSource would."""

    def __init__(self, path: str, *, cookie: str = "", headers=(), method="GET"):
        path, _, query = path.partition("?")
        raw_headers = [(b"host", b"127.0.0.1")]
        if cookie:
            raw_headers.append((b"cookie", f"sessionid={cookie}".encode()))
        raw_headers += [(k.encode(), v.encode()) for k, v in headers]
        self.scope = http_scope(
            method=method,
            path=path,
            query_string=query.encode(),
            headers=raw_headers,
            server_name="127.0.0.1",
        )
        self.messages: asyncio.Queue = asyncio.Queue()
        self._gone = asyncio.Event()
        self._asked = False
        self._buffer = ""
        self.task = asyncio.create_task(
            application(self.scope, self._receive, self._send)
        )

    async def _receive(self):
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message):
        await self.messages.put(message)

    async def response(self) -> tuple[int, dict, bytes]:
        start = await asyncio.wait_for(self.messages.get(), BOUND)
        headers = {k.decode(): v.decode() for k, v in start["headers"]}
        body = b""
        if not headers.get("content-type", "").startswith("text/event-stream"):
            message = await asyncio.wait_for(self.messages.get(), BOUND)
            body = message["body"]
        return start["status"], headers, body

    async def event(self) -> dict:
        """The next dispatched SSE event (retry lines skipped), as its fields."""
        while True:
            if "\n\n" in self._buffer:
                block, self._buffer = self._buffer.split("\n\n", 1)
                fields = dict(
                    line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
                    for line in block.split("\n")
                )
                if "data" in fields:
                    return fields
                continue
            message = await asyncio.wait_for(self.messages.get(), BOUND)
            self._buffer += message["body"].decode()

    async def close(self):
        self._gone.set()
        await asyncio.wait_for(self.task, BOUND)


def run(coroutine):
    return asyncio.run(coroutine)


def move(game, user, row, col):
    return services.play_move(game_id=game.pk, user=user, row=row, col=col)


async def in_thread(action, *args, **kwargs):
    """Run a service call in another thread, as a request in another worker would."""

    def call():
        try:
            return action(*args, **kwargs)
        finally:
            connection.close()

    return await asyncio.to_thread(call)


# The game stream ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_move_made_in_another_thread_reaches_the_stream(
    game, alice, carol, client_for
):
    cookie = sessionid(client_for(carol))  # a spectator

    async def scenario():
        stream = Stream(f"/games/{game.pk}/events/?v={game.version}", cookie=cookie)
        status, headers, _ = await stream.response()
        assert status == 200
        assert headers["content-type"] == "text/event-stream; charset=utf-8"
        assert headers["cache-control"] == "no-store"
        await in_thread(move, game, alice, 1, 1)
        event = await stream.event()
        await stream.close()
        return event

    assert run(scenario()) == {
        "id": str(game.version + 1),
        "data": str(game.version + 1),
    }
    assert hub.games == {}, "the stream unsubscribed when the client left"


@pytest.mark.django_db(transaction=True)
def test_a_stream_opened_with_an_old_version_gets_the_current_one_at_once(
    game, alice, bob, client_for
):
    cookie = sessionid(client_for(bob))
    move(game, alice, 0, 0)
    game.refresh_from_db()

    async def scenario():
        stream = Stream(f"/games/{game.pk}/events/?v=1", cookie=cookie)
        await stream.response()
        event = await stream.event()
        await stream.close()
        return event

    assert run(scenario()) == {"id": str(game.version), "data": str(game.version)}


@pytest.mark.django_db(transaction=True)
def test_reconnecting_with_last_event_id_receives_exactly_what_it_missed(
    game, alice, bob, client_for, play
):
    bob_client = client_for(bob)
    cookie = sessionid(bob_client)
    seen = game.version

    # While bob's page is disconnected, two moves are made.
    game = play(game, (0, 0), (1, 1))
    missed = game.version
    assert missed == seen + 2

    async def reconnect(last_event_id):
        stream = Stream(
            f"/games/{game.pk}/events/?v=1",
            cookie=cookie,
            headers=[("last-event-id", str(last_event_id))],
        )
        await stream.response()
        return stream

    async def scenario():
        stream = await reconnect(seen)
        caught_up = await stream.event()
        await stream.close()
        # Reconnecting up to date sends nothing until the next change: no repeat.
        stream = await reconnect(missed)
        await in_thread(move, game, alice, 2, 2)
        following = await stream.event()
        await stream.close()
        return caught_up, following

    caught_up, following = run(scenario())
    assert caught_up == {"id": str(missed), "data": str(missed)}
    assert following == {"id": str(missed + 1), "data": str(missed + 1)}
    # What the page then fetches shows the missed moves, once each.
    html = bob_client.get(reverse("game_live", args=[game.pk])).content.decode()
    assert html.count("<li>1. X (0, 0)</li>") == 1
    assert html.count("<li>2. O (1, 1)</li>") == 1
    assert html.count("<li>3. X (2, 2)</li>") == 1


@pytest.mark.django_db(transaction=True)
def test_each_stream_asks_for_its_own_reconnect_delay(game, bob, client_for):
    cookie = sessionid(client_for(bob))

    async def scenario():
        first_lines = []
        for _ in range(20):
            stream = Stream(f"/games/{game.pk}/events/?v={game.version}", cookie=cookie)
            await stream.response()
            first_lines.append((await stream.messages.get())["body"])
            await stream.close()
        return first_lines

    delays = [
        int(re.fullmatch(rb"retry: (\d+)\n\n", line)[1]) for line in run(scenario())
    ]
    assert all(1000 <= delay <= 5000 for delay in delays), delays
    # 20 equal draws out of 4,001 values would be a broken spread, not chance.
    assert len(set(delays)) > 1, delays


@pytest.mark.django_db(transaction=True)
def test_forfeit_join_and_rematch_reach_the_stream(alice, bob, client_for):
    cookie = sessionid(client_for(bob))
    open_game = services.create_game(creator=alice, opponent=None, side="x")

    async def next_version(stream, action):
        await in_thread(action)
        return int((await stream.event())["id"])

    async def scenario():
        stream = Stream(f"/games/{open_game.pk}/events/?v=1", cookie=cookie)
        await stream.response()
        joined = await next_version(
            stream, lambda: services.join_game(game_id=open_game.pk, user=bob)
        )
        forfeited = await next_version(
            stream, lambda: services.forfeit(game_id=open_game.pk, user=alice)
        )
        rematched = await next_version(
            stream, lambda: services.rematch(game_id=open_game.pk, user=bob)
        )
        await stream.close()
        return joined, forfeited, rematched

    assert run(scenario()) == (2, 3, 4)


@pytest.mark.django_db(transaction=True)
def test_lobby_stream_hears_about_own_games_and_open_games_only(
    alice, bob, carol, client_for, monkeypatch
):
    cookie = sessionid(client_for(bob))
    heard: dict[int, asyncio.Event] = {}
    deliver = hub.deliver

    def deliver_and_note(change):
        deliver(change)
        heard.setdefault(change.game_id, asyncio.Event()).set()

    monkeypatch.setattr(hub, "deliver", deliver_and_note)

    async def create(**kwargs):
        """Create a game; return bob's lobby news once this hub has heard of it."""
        game = await in_thread(services.create_game, side="x", **kwargs)
        await asyncio.wait_for(heard.setdefault(game.pk, asyncio.Event()).wait(), BOUND)
        return subscriber.pending

    async def scenario():
        nonlocal subscriber
        stream = Stream("/lobby/events/", cookie=cookie)
        status, _, _ = await stream.response()
        assert status == 200
        await asyncio.wait_for(hub.listening.wait(), BOUND)
        [subscriber] = hub.lobbies[bob.pk]
        before = subscriber.pending
        news = (
            before,
            await create(creator=alice, opponent=bob),
            await create(creator=carol, opponent=alice),
            await create(creator=carol, opponent=None),
        )
        event = await stream.event()
        await stream.close()
        return news, event

    subscriber = None
    (before, against_bob, private, open_game), event = run(scenario())
    assert against_bob > before, "bob's new game reached his lobby"
    assert private == against_bob, "another pair's private game did not"
    assert open_game > private, "an open game did"
    assert event == {"event": "lobby", "data": "refresh"}


def test_a_subscriber_keeps_only_the_latest_version():
    async def scenario():
        subscriber = Subscriber()
        for version in (3, 7, 5):
            subscriber.notify(version)
        woke = await asyncio.wait_for(subscriber.wait(), BOUND)
        subscriber.ping()
        pinged = await asyncio.wait_for(subscriber.wait(), BOUND)
        return woke, pinged, subscriber.pending

    # One wake-up for the burst, with the newest version; a ping is no news.
    assert run(scenario()) == ((True, False), (False, True), 7)


@pytest.mark.django_db(transaction=True)
def test_the_hubs_ticker_pings_each_stream_once_per_round(game, bob, client_for):
    cookie = sessionid(client_for(bob))

    async def scenario():
        streams_ = [
            Stream(f"/games/{game.pk}/events/?v={game.version}", cookie=cookie)
            for _ in range(3)
        ]
        for stream in streams_:
            await stream.response()
        for _ in range(KEEPALIVE_SLICES):  # one round of the ticker
            hub.tick()
        pings = [await stream.event() for stream in streams_]
        for stream in streams_:
            await stream.close()
        return pings

    assert run(scenario()) == [{"event": "ping", "data": ""}] * 3


def test_changes_round_trip_through_the_wire_format():
    changes = [Change(12, 5, (1, 2), open_games=True), Change(3, 1, ())]
    assert decode(encode(changes)) == changes


def test_merged_changes_keep_the_newest_version_and_every_lobby():
    older = Change(12, 5, (1,), open_games=True)
    newer = Change(12, 6, (2,))
    assert newer.merged(older) == Change(12, 6, (1, 2), open_games=True)
    assert older.merged(newer) == Change(12, 6, (1, 2), open_games=True)


# Refusals -------------------------------------------------------------------------

GET_AND_HEAD_ONLY = "This address only accepts GET and HEAD requests."


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("path", "method", "logged_in", "status", "message"),
    [
        ("/games/{id}/events/", "GET", False, 403, "Log in to watch games."),
        ("/lobby/events/", "GET", False, 403, "Log in to see your lobby."),
        ("/games/999999/events/", "GET", True, 404, "There is no such game."),
        ("/games/" + "9" * 30 + "/events/", "GET", True, 404, "There is no such game."),
        *(
            (path, method, True, 405, GET_AND_HEAD_ONLY)
            for path in ("/games/{id}/events/", "/lobby/events/")
            for method in ("POST", "PUT", "DELETE", "OPTIONS")
        ),
    ],
)
def test_streams_refuse(
    game, carol, client_for, path, method, logged_in, status, message
):
    cookie = sessionid(client_for(carol)) if logged_in else "not-a-session"

    async def scenario():
        stream = Stream(path.format(id=game.pk), cookie=cookie, method=method)
        response = await stream.response()
        await stream.close()
        return response

    got_status, headers, body = run(scenario())
    assert (got_status, body.decode()) == (status, message)
    if status == 405:
        assert headers["allow"] == "GET, HEAD"
    assert hub.games == {}
    assert hub.lobbies == {}


async def _answer(path, **kwargs):
    stream = Stream(path, **kwargs)
    response = await stream.response()
    await stream.close()
    return response


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "host",
    ["evil.example", "127.0.0.1.evil.example", "evil.example:80", "", "127.0.0.1@x"],
)
@pytest.mark.parametrize("path", ["/games/{id}/events/", "/lobby/events/"])
def test_streams_refuse_a_host_that_is_not_allowed(game, carol, client_for, host, path):
    cookie = sessionid(client_for(carol))

    async def scenario():
        stream = Stream(path.format(id=game.pk), cookie=cookie)
        stream.scope["headers"][0] = (b"host", host.encode())
        response = await stream.response()
        await stream.close()
        return response

    status, _, body = run(scenario())
    assert (status, body) == (400, b"Bad request: unknown host.")
    assert hub.games == {}
    assert hub.lobbies == {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ("?v=abc", []),
        ("?v=-1", []),
        ("?v=1e3", []),
        ("?v=١", []),  # a non-ASCII digit
        ("?v=12345678901", []),
        ("", [("last-event-id", "not-a-version")]),
        ("?v=1", [("last-event-id", "2; DROP")]),
    ],
)
def test_game_stream_refuses_a_version_that_is_not_one(
    game, carol, client_for, query, headers
):
    cookie = sessionid(client_for(carol))
    path = f"/games/{game.pk}/events/{query}"
    status, _, body = run(_answer(path, cookie=cookie, headers=headers))
    assert (status, body.decode()) == (
        400,
        "Bad request: Last-Event-ID and v must be a game version (digits).",
    )
    assert hub.games == {}


def _inactive(user):
    user.is_active = False
    user.save()


def _password_changed(user):
    user.set_password("a-new-password-after-the-login")
    user.save()


def _session_expired(user):
    from importlib import import_module

    from django.conf import settings
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    engine = import_module(settings.SESSION_ENGINE)
    for key in Session.objects.values_list("session_key", flat=True):
        session = engine.SessionStore(key)
        session.set_expiry(timezone.now())
        session.save()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "change", [_inactive, _password_changed, _session_expired], ids=lambda f: f.__name__
)
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/games/{id}/events/", "Log in to watch games."),
        ("/lobby/events/", "Log in to see your lobby."),
    ],
)
def test_streams_refuse_a_session_a_page_would_refuse(
    game, carol, client_for, change, path, message
):
    client = client_for(carol)
    cookie = sessionid(client)
    # The same session opens a stream before the change, and a page refuses it
    # after it, as the stream must.
    status, _, _ = run(_answer(path.format(id=game.pk), cookie=cookie, method="HEAD"))
    assert status == 200
    change(carol)
    page = client.get(reverse("game_detail", args=[game.pk]))
    assert page.status_code == 302
    assert page["Location"].startswith(reverse("account_login"))

    status, _, body = run(_answer(path.format(id=game.pk), cookie=cookie))
    assert (status, body.decode()) == (403, message)
    assert hub.games == {}
    assert hub.lobbies == {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/games/{id}/events/", "/lobby/events/"])
def test_streams_answer_503_while_the_database_cannot_be_reached(
    game, carol, client_for, monkeypatch, path
):
    """As the pages do (games.errors): a readable 503, never a traceback. The
    real outage, a stopped PostgreSQL, is in tests/test_database_outage.py."""
    cookie = sessionid(client_for(carol))

    def unreachable(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(streams, "_viewer", unreachable)
    status, headers, body = run(_answer(path.format(id=game.pk), cookie=cookie))
    assert (status, body.decode()) == (
        503,
        "The game server cannot reach its database right now. Try again in a moment.",
    )
    assert headers["retry-after"] == "5"
    assert hub.games == {}
    assert hub.lobbies == {}


def test_stream_routes_match_the_url_names():
    assert streams.route(reverse("game_events", args=[7])) is not None
    assert streams.route(reverse("lobby_events")) is streams.lobby_stream
    assert streams.route(reverse("game_live", args=[7])) is None
    assert streams.route("/games/7/events/extra") is None
    assert streams.route("/games/٧/events/") is None  # not an ASCII digit


@pytest.mark.parametrize("name", ["game_events", "lobby_events"])
def test_stream_urls_under_a_plain_wsgi_server_answer_204(name, game, client_for, bob):
    args = [game.pk] if name == "game_events" else []
    response = client_for(bob).get(reverse(name, args=args))
    assert response.status_code == 204


# The live partials ------------------------------------------------------------------


@pytest.mark.django_db
def test_live_partial_for_the_player_to_move_has_the_buttons(
    game, alice, client_for, django_assert_num_queries
):
    client = client_for(alice)
    with django_assert_num_queries(2):  # user, game (players, series joined)
        response = client.get(reverse("game_live", args=[game.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert "<html" not in html
    assert html.count('class="cell-button"') == 9
    assert f'data-version="{game.version}"' in html
    assert 'data-title="● Your turn — Game' in html


@pytest.mark.django_db
def test_live_partial_for_the_waiting_player_and_a_spectator_has_no_buttons(
    game, bob, carol, client_for
):
    for user in (bob, carol):
        response = client_for(user).get(reverse("game_live", args=[game.pk]))
        html = response.content.decode()
        assert response.status_code == 200
        assert "cell-button" not in html
        assert "Waiting for alice (X)." in html
        assert 'data-title="Game' in html


@pytest.mark.django_db
def test_live_partial_of_a_finished_game_links_to_its_rematch(
    game, bob, carol, client_for, play
):
    game = play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    rematch = services.rematch(game_id=game.pk, user=bob)
    html = client_for(carol).get(reverse("game_live", args=[game.pk])).content.decode()
    assert f'href="/games/{rematch.pk}/"' in html
    assert f"Watch the rematch (game {rematch.pk})" in html
    assert 'data-title="alice (X) wins! — Game' in html
    html = client_for(bob).get(reverse("game_live", args=[game.pk])).content.decode()
    assert f"Go to the rematch (game {rematch.pk})" in html


@pytest.mark.django_db
def test_live_partial_status_codes(game, bob, client, client_for):
    url = reverse("game_live", args=[game.pk])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={url}"
    assert client_for(bob).get(reverse("game_live", args=[999999])).status_code == 404
    response = client_for(bob).post(url)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_lobby_live_partial_lists_games_without_the_form(
    game, alice, client_for, django_assert_num_queries
):
    client = client_for(alice)
    # user, the lobby's version; rendered: active, open, finished
    with django_assert_num_queries(5):
        response = client.get(reverse("lobby_live"))
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        f'<a href="/games/{game.pk}/">Game {game.pk}</a>: '
        '<a href="/players/alice/">alice</a> (X) vs '
        '<a href="/players/bob/">bob</a> (O)'
    ) in html
    assert "Your turn." in html
    assert 'name="opponent"' not in html


@pytest.mark.django_db
def test_game_page_loads_the_live_script_and_refreshes_without_it(
    game, alice, bob, client_for
):
    waiting = client_for(bob).get(reverse("game_detail", args=[game.pk]))
    html = waiting.content.decode()
    assert '<script src="/static/games/live.js" defer></script>' in html
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in html
    assert f'data-events="/games/{game.pk}/events/"' in html
    moving = client_for(alice).get(reverse("game_detail", args=[game.pk]))
    assert "http-equiv" not in moving.content.decode()
    assert "<title>● Your turn — Game" in moving.content.decode()


# Through real server processes ---------------------------------------------------


POSTGRES_URL = os.environ.get(
    "LIVE_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Browser:
    """A cookie jar and forms with CSRF tokens, over plain HTTP."""

    def __init__(self):
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar)
        )

    def get(self, url):
        with self.opener.open(url, timeout=BOUND) as response:
            return response.geturl(), response.read().decode()

    def post(self, url, form_url, **fields):
        _, html = self.get(form_url)
        fields["csrfmiddlewaretoken"] = re.search(
            r'name="csrfmiddlewaretoken" value="([^"]+)"', html
        )[1]
        data = urllib.parse.urlencode(fields).encode()
        with self.opener.open(url, data=data, timeout=BOUND) as response:
            return response.geturl(), response.read().decode()

    def cookie(self, name):
        return next(c.value for c in self.jar if c.name == name)


class Watcher:
    """One stream on a server process, read in a thread as a browser would."""

    def __init__(self, port: int, path: str, session: str):
        self.found: queue.Queue = queue.Queue()
        self._connection = HTTPConnection("127.0.0.1", port, timeout=BOUND * 3)
        self._connection.request(
            "GET", path, headers={"Cookie": f"sessionid={session}"}
        )
        self._socket = self._connection.sock
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            response = self._connection.getresponse()
            self.found.put(("status", response.status))
            for raw in response:
                line = raw.decode().strip()
                if line.startswith("id: "):
                    self.found.put(("id", int(line[4:])))
            self.found.put(("end", None))
        except OSError:
            self.found.put(("closed", None))

    def next(self, timeout: float = BOUND):
        return self.found.get(timeout=timeout)

    def reaches(self, version: int, deadline: float) -> bool:
        """Whether the stream announces `version` before the deadline (monotonic)."""
        while (left := deadline - time.monotonic()) > 0:
            try:
                kind, value = self.found.get(timeout=left)
            except queue.Empty:
                return False
            if kind == "id" and value >= version:
                return True
        return False

    def close(self):
        """Hang up; the reading thread sees the end of the stream and stops."""
        self._socket.shutdown(socket.SHUT_RDWR)


REDIS_URL = os.environ.get("LIVE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _unavailable(reason: str, required_by: str) -> None:
    """Skip, and say so; fail instead where CI requires the service."""
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{reason} ({required_by}=1)")
    pytest.skip(reason)


def _postgres_database():
    """A fresh PostgreSQL database (skipped, and said so, only when it is down)."""
    import psycopg

    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        _unavailable(
            f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}", "REQUIRE_POSTGRES"
        )
    prefix = os.environ.get("LIVE_TEST_DB_PREFIX", "test_live_")
    name = f"{prefix}{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def _redis_reachable() -> None:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        _unavailable(f"Redis unreachable at {REDIS_URL}: {exc}", "REQUIRE_REDIS")


@pytest.fixture
def backend(request, tmp_path):
    """What the server processes share, as their variables: a SQLite file (news
    by local sockets), a PostgreSQL database (LISTEN/NOTIFY), or a PostgreSQL
    database with REDIS_URL (Redis pub/sub)."""
    if request.param == "sqlite":
        yield {"DATABASE_URL": f"sqlite:///{tmp_path / 'live.sqlite3'}"}
        return
    if request.param == "redis":
        _redis_reachable()
    for database_url in _postgres_database():
        env = {"DATABASE_URL": database_url}
        if request.param == "redis":
            env["REDIS_URL"] = REDIS_URL
        yield env


EVERY_BROKER = pytest.mark.parametrize(
    "backend", ["sqlite", "postgresql", "redis"], indirect=True
)
SEVERAL_HOSTS = pytest.mark.parametrize(
    "backend", ["postgresql", "redis"], indirect=True
)


def _server_env(backend: dict, port: int) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "WEB_", "PYTEST", "REDIS_"))
    }
    env.update(
        backend,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY="1",
        GAMES_LOG_LEVEL="WARNING",
        # GAMES_SCRIPT starts up to 40 games of alice against bob at once.
        GAMES_MAX_UNSTARTED_PER_USER="100",
        GAMES_MAX_UNSTARTED_PER_OPPONENT="100",
        # Up to 40 streams of one user in one process (80 watchers, 2 users).
        WEB_MAX_STREAMS_PER_USER="100",
    )
    return env


def _wait_until_serving(port: int, process) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server process exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)  # polling for a port, bounded by the deadline
    raise AssertionError(f"no server on port {port}")


def _manage(backend: dict, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_server_env(backend, 0),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextmanager
def _serving(backend: dict, count: int, *, log=subprocess.DEVNULL, **env):
    """`count` servers (one worker process each, unless WEB_CONCURRENCY is given)
    on one database, as if on `count` hosts; yields their ports and processes."""
    _manage(backend, "migrate", "--noinput", "-v", "0")
    ports = [_free_port() for _ in range(count)]
    servers = [
        subprocess.Popen(
            [sys.executable, "-m", "tictactoe_site.serve"],
            cwd=ROOT,
            env=_server_env(backend, port) | env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for port in ports
    ]
    try:
        for port, process in zip(ports, servers, strict=True):
            _wait_until_serving(port, process)
        yield ports, servers
    finally:
        for process in servers:
            process.send_signal(signal.SIGCONT)  # in case a test left it stopped
            process.terminate()
        for process in servers:
            process.wait(timeout=30)


# Users, their sessions (logged in server-side, like Client.force_login) and games
# between alice and bob, made through the services; printed as JSON.
GAMES_SCRIPT = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from games import services

users, sessions = {}, {}
for name in ("alice", "bob", "carol"):
    users[name] = get_user_model().objects.create_user(name)
    session = SessionStore()
    session[SESSION_KEY] = str(users[name].pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = users[name].get_session_auth_hash()
    session.create()
    sessions[name] = session.session_key
games = [
    services.create_game(creator=users["alice"], opponent=users["bob"], side="x")
    for _ in range(COUNT)
]
print(json.dumps({"sessions": sessions, "games": {g.pk: g.version for g in games}}))
"""

CSRF = "a" * 32  # a CSRF secret of our own choosing, sent as cookie and field


def _games(backend: dict, count: int) -> tuple[dict, dict[int, int]]:
    output = _manage(backend, "shell", "-c", GAMES_SCRIPT.replace("COUNT", str(count)))
    made = json.loads(output.strip().splitlines()[-1])
    return made["sessions"], {int(k): v for k, v in made["games"].items()}


def _play(port: int, session: str, game_id: int, row: int, col: int, ply: int):
    """A move POSTed as the browser's form would; returns the status."""
    connection = HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        connection.request(
            "POST",
            f"/games/{game_id}/move/",
            body=urllib.parse.urlencode(
                {"row": row, "col": col, "ply": ply, "csrfmiddlewaretoken": CSRF}
            ),
            headers={
                "Cookie": f"sessionid={session}; csrftoken={CSRF}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


@EVERY_BROKER
def test_a_move_through_one_server_process_reaches_a_stream_on_another(backend):
    with _serving(backend, 2) as (ports, _):
        a, b = (f"http://127.0.0.1:{port}" for port in ports)
        alice, bob = Browser(), Browser()
        for browser, name in ((alice, "alice"), (bob, "bob")):
            browser.post(
                f"{b}/accounts/signup/",
                f"{b}/accounts/signup/",
                username=name,
                password1="a-long-test-password-42",
                password2="a-long-test-password-42",
            )
        game_url, _ = alice.post(f"{b}/games/new/", f"{b}/", opponent="bob", side="x")
        game_path = urllib.parse.urlsplit(game_url).path

        # bob watches on server A; alice moves through server B.
        watcher = Watcher(ports[0], f"{game_path}events/?v=1", bob.cookie("sessionid"))
        assert watcher.next() == ("status", 200)
        alice.post(f"{b}{game_path}move/", f"{b}{game_path}", row=1, col=1, ply=0)
        assert watcher.next() == ("id", 2)
        _, html = bob.get(f"{a}{game_path}live/")
        assert "<li>1. X (1, 1)</li>" in html
        watcher.close()


STOPPED_SECONDS = 2.5  # a long pause or CPU starvation of one worker


@EVERY_BROKER
def test_every_watcher_catches_up_after_its_server_process_was_stopped(backend):
    """40 moves while the watchers' process cannot read: far more changes than
    the kernel queues for it (net.unix.max_dgram_qlen, 10 by default)."""
    with _serving(backend, 2) as (ports, servers):
        sessions, games = _games(backend, 40)
        watchers = {
            (game_id, name): Watcher(
                ports[0], f"/games/{game_id}/events/?v={version}", sessions[name]
            )
            for game_id, version in games.items()
            for name in ("bob", "carol")
        }
        for watcher in watchers.values():
            assert watcher.next() == ("status", 200)

        servers[0].send_signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            statuses = {
                _play(ports[1], sessions["alice"], game_id, 1, 1, 0)
                for game_id in games
            }
            time.sleep(max(0.0, stopped_at + STOPPED_SECONDS - time.monotonic()))
        finally:
            servers[0].send_signal(signal.SIGCONT)
        assert statuses == {302}

        deadline = time.monotonic() + BOUND
        behind = [
            key
            for key, watcher in watchers.items()
            if not watcher.reaches(games[key[0]] + 1, deadline)
        ]
        assert behind == []
        for watcher in watchers.values():
            watcher.close()


def test_stopping_the_server_ends_open_streams_cleanly_and_in_time(tmp_path):
    """SIGTERM to `make serve`'s server (2 workers) with streams open: each
    stream ends properly, the log has no traceback, and the workers do not wait
    out their grace period."""
    backend = {"DATABASE_URL": f"sqlite:///{tmp_path / 'live.sqlite3'}"}
    log_path = tmp_path / "serve.log"
    with (
        log_path.open("w") as log,
        _serving(backend, 1, log=log, WEB_CONCURRENCY="2") as (ports, servers),
    ):
        sessions, games = _games(backend, 5)
        watchers = [
            Watcher(ports[0], path, sessions[name])
            for name in ("alice", "bob", "carol")
            for path in ["/lobby/events/", *(f"/games/{pk}/events/" for pk in games)]
        ]
        for watcher in watchers:
            assert watcher.next() == ("status", 200)
        servers[0].terminate()
        assert servers[0].wait(timeout=30) == 0
        for watcher in watchers:
            ending = watcher.next()
            while ending[0] == "id":  # the current version, sent on opening
                ending = watcher.next()
            assert ending == ("end", None)
    output = log_path.read_text()
    assert "Traceback" not in output, output
    assert "timeout graceful shutdown exceeded" not in output, output
    assert "ASGI callable" not in output, output
    assert output.count("Finished server process") == 2, output


@SEVERAL_HOSTS
def test_a_move_through_any_of_four_server_processes_reaches_all_of_them(backend):
    """As if on 4 hosts: watchers on every process, a move through each in turn."""
    with _serving(backend, 4) as (ports, _):
        sessions, games = _games(backend, 1)
        [(game_id, version)] = games.items()
        watchers = [
            Watcher(port, f"/games/{game_id}/events/?v={version}", sessions["carol"])
            for port in ports
        ]
        for watcher in watchers:
            assert watcher.next() == ("status", 200)
        cells = [(0, 0), (1, 1), (0, 1), (2, 2)]
        for ply, (port, (row, col)) in enumerate(zip(ports, cells, strict=True)):
            player = sessions["alice" if ply % 2 == 0 else "bob"]
            assert _play(port, player, game_id, row, col, ply) == 302
            version += 1
            assert [watcher.next() for watcher in watchers] == [("id", version)] * 4
        for watcher in watchers:
            watcher.close()


@pytest.mark.django_db(transaction=True)
def test_an_abort_reaches_the_game_stream_and_the_other_players_lobby(
    alice, bob, carol, client_for
):
    game = services.create_game(creator=alice, opponent=bob, side="x")
    move(game, alice, 0, 0)
    open_game = services.create_game(creator=alice, opponent=None)
    bob_cookie = sessionid(client_for(bob))
    carol_cookie = sessionid(client_for(carol))

    async def scenario():
        game_stream = Stream(f"/games/{game.pk}/events/?v=2", cookie=bob_cookie)
        bob_lobby = Stream("/lobby/events/", cookie=bob_cookie)
        carol_lobby = Stream("/lobby/events/", cookie=carol_cookie)
        for stream in (game_stream, bob_lobby, carol_lobby):
            assert (await stream.response())[0] == 200
        await in_thread(services.abort, game_id=game.pk, user=alice)
        aborted = await game_stream.event()
        bob_heard = await bob_lobby.event()
        # carol is in neither game: she hears the open game's withdrawal.
        await in_thread(services.abort, game_id=open_game.pk, user=alice)
        carol_heard = await carol_lobby.event()
        for stream in (game_stream, bob_lobby, carol_lobby):
            await stream.close()
        return aborted, bob_heard, carol_heard

    aborted, bob_heard, carol_heard = run(scenario())
    assert aborted == {"id": "3", "data": "3"}
    assert bob_heard == carol_heard == {"event": "lobby", "data": "refresh"}
