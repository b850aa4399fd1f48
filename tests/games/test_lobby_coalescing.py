"""Lobby news is coalesced per process (games.live.subscribers.Coalescer): one user
creating and aborting open games over and over wakes each lobby stream at most
once a second, and the last change always arrives (the trailing edge).

Time is a `Timeline` the test moves by hand, or a real event loop waited on
with deadlines; nothing sleeps."""

import asyncio

import pytest

from games import services
from games.live import Change
from games.live.hub import Hub, hub
from games.live.subscribers import Coalescer, Subscriber

from ..support.asgi import BOUND, Stream, in_thread, run, sessionid


class Timeline:
    """A clock that moves only when told, and the callbacks scheduled on it."""

    class Handle:
        def __init__(self, when: float, callback) -> None:
            self.when, self.callback, self.cancelled = when, callback, False

        def cancel(self) -> None:
            self.cancelled = True

    def __init__(self) -> None:
        self.now = 0.0
        self.due: list[Timeline.Handle] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback) -> "Timeline.Handle":
        handle = self.Handle(self.now + delay, callback)
        self.due.append(handle)
        return handle

    def advance_to(self, when: float) -> None:
        """Move to `when`, calling each callback due on the way at its time."""
        while ready := [h for h in self.due if h.when <= when]:
            handle = min(ready, key=lambda h: h.when)
            self.due.remove(handle)
            if not handle.cancelled:
                self.now = handle.when
                handle.callback()
        self.now = when


@pytest.fixture
def timeline() -> Timeline:
    return Timeline()


@pytest.fixture
def flushes(timeline) -> list[float]:
    return []


@pytest.fixture
def coalescer(timeline, flushes) -> Coalescer:
    return Coalescer(
        1.0,
        lambda: flushes.append(timeline.now),
        clock=timeline.clock,
        schedule=timeline.schedule,
    )


def test_news_after_a_quiet_second_is_delivered_at_once(coalescer, timeline, flushes):
    coalescer.flush_soon()
    assert flushes == [0.0]
    timeline.advance_to(5.0)
    coalescer.flush_soon()
    assert flushes == [0.0, 5.0]
    timeline.advance_to(6.0)  # exactly a second later
    coalescer.flush_soon()
    assert flushes == [0.0, 5.0, 6.0]
    assert timeline.due == []


def test_news_within_the_second_waits_for_one_delivery_at_its_end(
    coalescer, timeline, flushes
):
    coalescer.flush_soon()
    for when in (0.1, 0.5, 0.9):
        timeline.advance_to(when)
        coalescer.flush_soon()
    assert flushes == [0.0]
    timeline.advance_to(0.999)
    assert flushes == [0.0]
    timeline.advance_to(10.0)
    assert flushes == [0.0, 1.0]


def test_a_long_burst_is_delivered_once_a_second_and_its_end_too(
    coalescer, timeline, flushes
):
    """100 pieces of news, one every 35 ms (0 to 3.465 s): five deliveries,
    a second apart, the last one after the last news."""
    for step in range(100):
        timeline.advance_to(step * 35 / 1000)
        coalescer.flush_soon()
    timeline.advance_to(60.0)
    assert flushes == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_cancel_drops_the_news_waiting(coalescer, timeline, flushes):
    coalescer.flush_soon()
    timeline.advance_to(0.5)
    coalescer.flush_soon()
    coalescer.cancel()
    timeline.advance_to(10.0)
    assert flushes == [0.0]
    coalescer.flush_soon()  # and starts afresh
    assert flushes == [0.0, 10.0]


# -- the hub -----------------------------------------------------------------------


class CountingSubscriber(Subscriber):
    """A stream's subscriber that counts its wake-ups by news."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.woken = 0

    def notify(self, version: int) -> None:
        self.woken += 1
        super().notify(version)


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.setattr("games.live.hub.Subscriber", CountingSubscriber)


def on_this_loop() -> Hub:
    """A hub of the test's own on the running loop, listening to nothing: news
    is handed to it by the test."""
    own = Hub()
    own.loop = asyncio.get_running_loop()
    return own


CHURNER = 99  # the user creating and aborting open games


def churn(own: Hub, cycles: int) -> None:
    """What one user's create-and-abort cycles tell every process."""
    for game_id in range(1, cycles + 1):
        own.deliver(Change(game_id, 1, (CHURNER,), open_games=True))  # created
        own.deliver(Change(game_id, 2, (CHURNER,), open_games=True))  # aborted


@pytest.mark.usefixtures("counting")
def test_one_users_churn_wakes_each_lobby_once_then_once_at_the_end():
    """50 create/abort cycles: every lobby of the process is woken once at
    once, and once more a second later with the last state, not 100 times."""

    async def scenario():
        own = on_this_loop()
        lobbies = [own.subscribe_lobby(user_id) for user_id in (1, 2, 3, 1)]
        games = own.subscribe_game(7)
        churn(own, 50)
        own.deliver(Change(7, 3, (1, 2)))  # a move in a game: at once
        woken_at_once = [lobby.woken for lobby in lobbies]
        game_news = games.pending
        for _ in range(2):  # the leading wake-up, then the trailing one
            assert await asyncio.wait_for(lobbies[0].wait(), BOUND) == (True, False)
        woken = [lobby.woken for lobby in lobbies]
        own.stop()
        return woken_at_once, game_news, woken

    woken_at_once, game_news, woken = run(scenario())
    assert woken_at_once == [1, 1, 1, 1]
    assert game_news == 3
    assert woken == [2, 2, 2, 2]


@pytest.mark.usefixtures("counting")
def test_news_of_a_players_game_wakes_only_their_lobbies(timeline):
    async def scenario():
        own = on_this_loop()
        own.lobby_refresh = Coalescer(
            1.0,
            own._refresh_lobbies,
            clock=timeline.clock,
            schedule=timeline.schedule,
        )
        alice, bob, carol = (own.subscribe_lobby(user_id) for user_id in (1, 2, 3))
        own.deliver(Change(1, 2, (1, 2)))  # alice and bob's game: at once
        after_first = [s.woken for s in (alice, bob, carol)]
        own.deliver(Change(2, 2, (3,)))  # carol's, within the second
        own.deliver(Change(3, 2, (2, 3)))  # bob and carol's
        within = [s.woken for s in (alice, bob, carol)]
        timeline.advance_to(1.0)
        at_its_end = [s.woken for s in (alice, bob, carol)]
        own.stop()
        return after_first, within, at_its_end

    assert run(scenario()) == ([1, 1, 0], [1, 1, 0], [1, 2, 1])


# -- through the streams -------------------------------------------------------------


async def news(stream: Stream) -> dict:
    """The stream's next event but pings (the hub's ticker pings any time)."""
    while (event := await stream.event()).get("event") == "ping":
        pass
    return event


@pytest.mark.usefixtures("fresh_hub")
@pytest.mark.django_db(transaction=True)
def test_a_lobby_stream_hears_a_burst_once_then_its_last_state(
    alice, carol, client_for, settings, timeline, monkeypatch
):
    """alice creates and aborts 50 open games, then opens one more: carol's
    lobby stream gets one event at the first change and one at the end of the
    second, after which her lobby shows the last game, and no other."""
    settings.GAMES_MAX_OPEN_PER_USER = 1
    as_carol = client_for(carol)
    cookie = sessionid(as_carol)
    delivered: list[float] = []

    def deliver() -> None:
        delivered.append(timeline.now)
        hub._refresh_lobbies()

    monkeypatch.setattr(
        hub,
        "lobby_refresh",
        Coalescer(1.0, deliver, clock=timeline.clock, schedule=timeline.schedule),
    )
    heard: dict[int, asyncio.Event] = {}
    deliver_change = hub.deliver

    def deliver_and_note(change):
        deliver_change(change)
        heard.setdefault(change.game_id, asyncio.Event()).set()

    monkeypatch.setattr(hub, "deliver", deliver_and_note)

    def burst() -> int:
        for _ in range(50):
            game = services.create_game(creator=alice)
            services.abort(game_id=game.pk, user=alice)
        return services.create_game(creator=alice).pk

    async def scenario():
        stream = Stream("/lobby/events/", cookie=cookie)
        status, _, _ = await stream.response()
        assert status == 200
        await asyncio.wait_for(hub.listening.wait(), BOUND)
        last_game = await in_thread(burst)
        # Changes reach the hub in the order they were made (one connection).
        await asyncio.wait_for(
            heard.setdefault(last_game, asyncio.Event()).wait(), BOUND
        )
        first = await news(stream)
        heard_during_the_burst = list(delivered)
        timeline.advance_to(1.0)
        last = await news(stream)
        lists = await in_thread(as_carol.get, "/lobby/live/")
        await stream.close()
        return last_game, first, heard_during_the_burst, last, lists

    last_game, first, during, last, lists = run(scenario())
    refresh = {"event": "lobby", "data": "refresh"}
    assert (first, last) == (refresh, refresh)
    assert during == [0.0]
    assert delivered == [0.0, 1.0]
    page = lists.content.decode()
    assert f"Join game {last_game}" in page
    assert page.count("Join game ") == 1
