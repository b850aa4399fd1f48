"""Live streams end with their session, and one user holds a bounded number.

A stream authenticates once, when it opens; from then on it ends within one
ping interval (games.live.hub.KEEPALIVE_SECONDS) when its user logs out (that
session), changes password, is deactivated or closes the account, or is deleted
(every session), however the change was made: through Django's own signals and
the user model's, never our views. Streams are driven through the ASGI app as
in tests/games/test_live_streams.py (tests/support/asgi.py); every wait has a
deadline, nothing sleeps. Across real server processes and every broker:
tests/fleet/test_live_sessions.py.
"""

import asyncio

import pytest
from django.db import OperationalError, connection
from django.test import Client

from accounts import services as account_services
from games.live import sessions, streams
from games.live.hub import KEEPALIVE_SECONDS, hub

from ..support.asgi import BOUND, Stream, in_thread, move, run, sessionid

LOGGED_OUT_WITHIN = KEEPALIVE_SECONDS  # one ping interval


pytestmark = pytest.mark.usefixtures("fresh_hub")


async def ended(stream: Stream) -> dict:
    """Wait (bounded) for the stream's handler to return; its last message."""
    await asyncio.wait_for(asyncio.shield(stream.task), LOGGED_OUT_WITHIN)
    last = None
    while not stream.messages.empty():
        last = stream.messages.get_nowait()
    return last


async def news(stream: Stream) -> dict:
    """The next event that is not the hub's keep-alive ping (one may come at
    any moment: the ticker pings a slice of the streams every second)."""
    while (event := await stream.event()).get("event") == "ping":
        pass
    return event


# The last message of a stream the server ended: the end of the response body.
END = {"type": "http.response.body", "body": b""}


async def opened(path: str, cookie: str) -> Stream:
    """An open stream, once the hub hears every notice published from now on
    (on PostgreSQL it LISTENs on a connection of its own)."""
    stream = Stream(path, cookie=cookie)
    status, _, _ = await stream.response()
    assert status == 200
    await asyncio.wait_for(hub.listening.wait(), BOUND)
    return stream


def _log_out(client: Client) -> None:
    client.logout()  # django.contrib.auth.logout, as every logout page calls


@pytest.mark.django_db(transaction=True)
def test_logging_out_ends_the_streams_of_that_session_and_no_other(
    game, alice, bob, carol, client_for
):
    leaving = client_for(bob)
    staying = client_for(bob)  # bob in another browser
    watching = client_for(carol)
    game_path = f"/games/{game.pk}/events/?v={game.version}"

    async def scenario():
        gone = [
            await opened(game_path, sessionid(leaving)),
            await opened("/lobby/events/", sessionid(leaving)),
        ]
        kept = [
            await opened(game_path, sessionid(staying)),
            await opened(game_path, sessionid(watching)),
        ]
        await in_thread(_log_out, leaving)
        endings = [await ended(stream) for stream in gone]
        # The others still hear the game.
        await in_thread(move, game, alice, 1, 1)
        events = [await news(stream) for stream in kept]
        for stream in kept:
            await stream.close()
        return endings, events

    endings, events = run(scenario())
    assert endings == [END, END]
    version = str(game.version + 1)
    assert events == [{"id": version, "data": version}] * 2
    assert hub.users == {}


def _password_changed(user):
    user.set_password("a-new-password-after-the-login")
    user.save()


def _deactivated(user):
    user.is_active = False
    user.save()  # as the admin's change form does


def _account_closed(user):
    account_services.close_account(user=user)


def _deleted(user):
    user.delete()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "change",
    [_password_changed, _deactivated, _account_closed, _deleted],
    ids=lambda f: f.__name__,
)
def test_an_account_change_ends_every_stream_of_the_user(
    game, alice, carol, make_user, client_for, change
):
    dave = make_user("dave")  # in no game, so that he can be deleted
    game_path = f"/games/{game.pk}/events/?v={game.version}"
    daves = [client_for(dave), client_for(dave)]
    carols = client_for(carol)

    async def scenario():
        gone = [
            await opened(path, sessionid(client))
            for client in daves
            for path in (game_path, "/lobby/events/")
        ]
        kept = await opened(game_path, sessionid(carols))
        await in_thread(change, dave)
        endings = [await ended(stream) for stream in gone]
        await in_thread(move, game, alice, 1, 1)
        event = await news(kept)
        await kept.close()
        return endings, event

    endings, event = run(scenario())
    assert endings == [END] * 4
    version = str(game.version + 1)
    assert event == {"id": version, "data": version}
    assert hub.users == {}


@pytest.mark.django_db(transaction=True)
def test_saving_a_user_without_changing_the_account_ends_no_stream(
    game, alice, bob, client_for
):
    cookie = sessionid(client_for(bob))

    def touched(user):
        user.first_name = "Robert"
        user.save()  # every field written, password and is_active unchanged

    async def scenario():
        stream = await opened(f"/games/{game.pk}/events/?v={game.version}", cookie)
        notices = hub.account_notices
        await in_thread(touched, bob)
        await in_thread(move, game, alice, 1, 1)
        event = await news(stream)  # heard after anything published before it
        await stream.close()
        return event, hub.account_notices - notices

    version = str(game.version + 1)
    assert run(scenario()) == ({"id": version, "data": version}, 0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/games/{id}/events/", "/lobby/events/"])
def test_a_logout_while_the_stream_reads_its_session_still_ends_it(
    game, bob, client_for, monkeypatch, path
):
    """The session is read (valid), then the user logs out and the notice is
    heard, and only then is the stream recorded as bob's: it must still end."""
    client = client_for(bob)
    real_viewer = streams._viewer

    def then_logged_out(*args):
        viewer = real_viewer(*args)
        try:
            _log_out(client)
        finally:
            connection.close()  # this thread's, as _viewer closes its own
        return viewer

    monkeypatch.setattr(streams, "_viewer", then_logged_out)

    async def scenario():
        hub.start()  # as the server's lifespan startup does: the hub listens
        stream = await opened(path.format(id=game.pk), sessionid(client))
        return await ended(stream)

    assert run(scenario()) == END
    assert hub.users == {}


TOO_MANY = (
    "Too many live pages are open for this account. Close some game or lobby "
    "tabs, then reload this page."
)


@pytest.mark.django_db(transaction=True)
def test_the_31st_stream_of_a_user_is_refused_with_a_readable_429(
    game, bob, carol, client_for
):
    bob_cookie = sessionid(client_for(bob))
    carol_cookie = sessionid(client_for(carol))
    game_path = f"/games/{game.pk}/events/?v={game.version}"

    async def scenario():
        held = [
            await opened("/lobby/events/" if n % 2 else game_path, bob_cookie)
            for n in range(30)
        ]
        refused = [
            await Stream(path, cookie=bob_cookie).response()
            for path in (game_path, "/lobby/events/")
        ]
        carols = await opened(game_path, carol_cookie)  # another user: not counted
        await held.pop().close()
        again = await opened(game_path, bob_cookie)  # one closed: one may open
        for stream in [*held, carols, again]:
            await stream.close()
        return refused

    refused = run(scenario())
    assert [(status, body.decode()) for status, _, body in refused] == [
        (429, TOO_MANY),
        (429, TOO_MANY),
    ]
    assert [headers["content-type"] for _, headers, _ in refused] == [
        "text/plain; charset=utf-8"
    ] * 2
    assert hub.users == {}
    assert hub.games == {}
    assert hub.lobbies == {}


@pytest.mark.django_db(transaction=True)
def test_the_limit_of_streams_per_user_is_a_setting(game, bob, client_for, settings):
    settings.WEB_MAX_STREAMS_PER_USER = 1
    cookie = sessionid(client_for(bob))

    async def scenario():
        first = await opened("/lobby/events/", cookie)
        second = await Stream("/lobby/events/", cookie=cookie).response()
        await first.close()
        return second

    status, _, body = run(scenario())
    assert (status, body.decode()) == (429, TOO_MANY)


@pytest.mark.django_db(transaction=True)
def test_a_stream_whose_session_cannot_be_rechecked_ends(
    game, bob, client_for, monkeypatch
):
    """The account changed and the database cannot say how: the stream ends,
    and the browser's reconnect is authenticated afresh (or gets the 503)."""
    cookie = sessionid(client_for(bob))

    def unreachable(sessions):
        raise OperationalError("connection refused")

    monkeypatch.setattr(sessions, "lapsed", unreachable)

    async def scenario():
        stream = await opened(f"/games/{game.pk}/events/?v={game.version}", cookie)
        await in_thread(_password_changed, bob)
        return await ended(stream)

    assert run(scenario()) == END
