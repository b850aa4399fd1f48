"""What the live streams refuse, and how: no session or a session a page would
refuse (403), no such game (404), another method (405), a version that is not
one or a host that is not allowed (400), a database that cannot be reached
(503); and the stream routes as the URL names give them.

Driven in-process through the ASGI application (tests/support/asgi.py).
"""

import pytest
from django.db import OperationalError
from django.urls import reverse

from games import services
from games.live import streams
from games.live.hub import hub

from ..support.asgi import Stream, run, sessionid

pytestmark = pytest.mark.usefixtures("fresh_hub")


GET_AND_HEAD_ONLY = "This address only accepts GET and HEAD requests."


@pytest.fixture
def waiting(alice):
    """alice's invitation, nobody joined: a game no visitor may watch (a
    started public one they may: tests/games/test_public_games.py)."""
    return services.create_invitation(creator=alice).game


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
    waiting, carol, client_for, path, method, logged_in, status, message
):
    cookie = sessionid(client_for(carol)) if logged_in else "not-a-session"

    async def scenario():
        stream = Stream(path.format(id=waiting.pk), cookie=cookie, method=method)
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
    waiting, carol, client_for, change, path, message
):
    game = waiting
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
    """As the pages do (tictactoe_site.lib.error_pages): a readable 503, never a
    traceback. The real outage, a stopped PostgreSQL, is in
    tests/served/test_database_outage.py."""
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
    assert streams.route(reverse("game_events", args=[7])).name == "game_events"
    assert streams.route(reverse("lobby_events")) == (
        streams.lobby_stream,
        "lobby_events",
    )
    assert streams.route(reverse("game_live", args=[7])) is None
    assert streams.route("/games/7/events/extra") is None
    assert streams.route("/games/٧/events/") is None  # not an ASCII digit


@pytest.mark.parametrize("name", ["game_events", "lobby_events"])
def test_stream_urls_under_a_plain_wsgi_server_answer_204(name, game, client_for, bob):
    args = [game.pk] if name == "game_events" else []
    response = client_for(bob).get(reverse(name, args=args))
    assert response.status_code == 204
