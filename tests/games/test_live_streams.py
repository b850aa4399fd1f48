"""The live streams in-process: a change made anywhere reaches the game's stream
and the lobbies it concerns, a reconnect gets exactly what it missed, each stream
asks for its own reconnect delay and hears the hub's pings.

The streams are driven through the ASGI application itself (tictactoe_site.server.asgi,
tests/support/asgi.py), as a server would; waits are bounded (asyncio.wait_for).
What a stream refuses: test_live_refusals.py; streams across real server
processes: test_live_hosts.py; streams that end with their session:
test_stream_sessions.py.
"""

import asyncio
import re

import pytest
from django.urls import reverse

from games import services
from games.live import Change
from games.live.hub import KEEPALIVE_SLICES, hub
from games.live.subscribers import Subscriber
from games.live.wire import decode, encode

from ..support.asgi import BOUND, Stream, in_thread, move, run, sessionid

pytestmark = pytest.mark.usefixtures("fresh_hub")


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
    assert html.count("<li>1. X: row 1, column 1</li>") == 1
    assert html.count("<li>2. O: row 2, column 2</li>") == 1
    assert html.count("<li>3. X: row 3, column 3</li>") == 1


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
        aborted = await game_stream.change()
        bob_heard = await bob_lobby.change()
        # carol is in neither game: she hears the open game's withdrawal.
        await in_thread(services.abort, game_id=open_game.pk, user=alice)
        carol_heard = await carol_lobby.change()
        for stream in (game_stream, bob_lobby, carol_lobby):
            await stream.close()
        return aborted, bob_heard, carol_heard

    aborted, bob_heard, carol_heard = run(scenario())
    assert aborted == {"id": "3", "data": "3"}
    assert bob_heard == carol_heard == {"event": "lobby", "data": "refresh"}


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
    # Each piece of news delivered at once, not a second after the one before
    # (tests/games/test_lobby_coalescing.py).
    monkeypatch.setattr(hub.lobby_refresh, "interval", 0.0)

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
