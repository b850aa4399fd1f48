"""Redis goes away for 10 s under play and comes back; no server is restarted.

Two server processes, as if on two hosts, share a PostgreSQL database and a
Redis server of the test's own (tests/support/private_redis.py: never the
machine's, which other runs share), with streams open on both. Redis is killed
for 10 s while moves are played through both and their pages read: every page
answers 200 and every move 302 (sessions live in the database; the news of a
move waits), each process logs exactly one line when Redis goes and one when it
is back, and no traceback. Redis started again on the same port: every stream
reaches its game's latest version within 5 s of its return.

And in this process, the publisher alone: a Redis that stops answering (SIGSTOP:
it still accepts connections, as a host gone silent does) holds up one publish
for its timeout, not every one; the news kept meanwhile is sent, one message of
the latest of each, when it answers again.
"""

import logging
import re
import signal
import time

import pytest
import redis

from games.live import AccountChanged, Change
from games.live.brokers.redis_pubsub import REDIS_TIMEOUT_SECONDS, RedisPublisher
from games.live.wire import decode

from ..support import hosts
from ..support.asgi import BOUND
from ..support.hosts import Watcher
from ..support.private_redis import PrivateRedis
from ..support.served import ACCESS_LINE

pytestmark = pytest.mark.processes

OUTAGE_SECONDS = 10.0
CATCH_UP_SECONDS = 5.0
GAMES = 4
# Each player's cell order: X 0 2 3 7 8, O 1 4 5 6 is a draw, so all nine plies
# of a game are legal.
DRAW_ORDER = (0, 1, 2, 4, 3, 5, 7, 6, 8)


@pytest.fixture
def redis_server():
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_play_goes_on_while_redis_is_away_and_every_stream_catches_up(
    backend, redis_server, tmp_path
):
    backend = backend | {"REDIS_URL": redis_server.url}
    log_paths = [tmp_path / "a.log", tmp_path / "b.log"]
    logs = [path.open("w") for path in log_paths]
    try:
        with hosts.serving(backend, 2, log=logs, WEB_ACCESS_LOG="1") as (ports, _):
            sessions, games = hosts.games(backend, GAMES)
            watchers = {
                (port, game_id): Watcher(
                    port, f"/games/{game_id}/events/?v={version}", sessions["carol"]
                )
                for port in ports
                for game_id, version in games.items()
            }
            for watcher in watchers.values():
                assert watcher.next() == ("status", 200)

            redis_server.kill()
            answers = []
            # One ply of every game a round, through each process in turn, and
            # their pages read, spread over the outage (a pace, not a wait).
            for ply, cell in enumerate(DRAW_ORDER):
                round_at = time.monotonic()
                port = ports[ply % 2]
                player = sessions["alice" if ply % 2 == 0 else "bob"]
                for game_id in games:
                    row, col = divmod(cell, 3)
                    status = hosts.play(port, player, game_id, row, col, ply)
                    answers.append((f"move {ply} of game {game_id}", status, 302))
                    for path in (f"/games/{game_id}/", f"/games/{game_id}/state.json"):
                        answers.append((path, hosts.get(port, path, player), 200))
                answers.append(("lobby", hosts.get(port, "/", player), 200))
                time.sleep(max(0.0, round_at + OUTAGE_SECONDS / 9 - time.monotonic()))
            redis_server.start()
            deadline = time.monotonic() + CATCH_UP_SECONDS

            assert [a for a in answers if a[1] != a[2]] == []
            final = {game_id: version + 9 for game_id, version in games.items()}
            behind = [
                key
                for key, watcher in watchers.items()
                if not watcher.reaches(final[key[1]], deadline)
            ]
            assert behind == []
            for watcher in watchers.values():
                watcher.close()
    finally:
        for log in logs:
            log.close()

    gone = f"live updates: Redis at 127.0.0.1:{redis_server.port} unreachable"
    back = f"live updates: Redis at 127.0.0.1:{redis_server.port} is back"
    for path in log_paths:
        output = path.read_text()
        assert output.count(gone) == 1, output
        assert re.search(rf"{re.escape(gone)} \(\w+", output), output  # says why
        assert output.count(back) == 1, output
        assert "Traceback" not in output, output
        statuses = {int(status) for status in ACCESS_LINE.findall(output)}
        assert statuses, output  # the access log was on
        assert max(statuses) < 500, output


@pytest.mark.timing
def test_a_silent_redis_holds_up_one_publish_and_gets_the_news_when_it_answers(
    redis_server, caplog
):
    channel = "tictactoe:publisher-test:live"
    listener = redis.Redis.from_url(redis_server.url).pubsub()
    listener.subscribe(channel)
    assert listener.get_message(timeout=BOUND)["type"] == "subscribe"
    publisher = RedisPublisher(redis_server.url, channel)
    publisher.publish(Change(1, 1, (7,)))
    assert decode(listener.get_message(timeout=BOUND)["data"]) == [Change(1, 1, (7,))]

    service = f"Redis at 127.0.0.1:{redis_server.port}"
    caplog.set_level(logging.WARNING, logger="games.live")
    redis_server.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        publisher.publish(Change(1, 2, (7,)))
        first = time.monotonic() - started
        started = time.monotonic()
        for version in range(3, 23):
            publisher.publish(Change(1, version, (7,)))
        publisher.publish(AccountChanged(7))
        rest = time.monotonic() - started
    finally:
        redis_server.process.send_signal(signal.SIGCONT)
    assert REDIS_TIMEOUT_SECONDS <= first < REDIS_TIMEOUT_SECONDS + 1
    assert rest < 0.25  # 21 publishes kept, none waiting on Redis

    # Redis answers again: the kept news arrives as one message (and the
    # publishes that timed out may arrive late, as Redis reads them).
    news = []
    deadline = time.monotonic() + BOUND
    while [Change(1, 22, (7,)), AccountChanged(7)] not in news:
        assert time.monotonic() < deadline, news
        message = listener.get_message(timeout=0.1)
        if message is not None:
            news.append(decode(message["data"]))
    versions = {item.version for items in news for item in items if item.key == 1}
    assert versions <= {2, 22}, news  # coalesced: nothing in between
    wait_for(lambda: len(caplog.records) == 2, "the publisher to see Redis back")
    assert not publisher.outage.down
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in logged] == ["WARNING", "WARNING"], logged
    gone, back = (message for _, message in logged)
    assert re.fullmatch(
        rf"live updates: {re.escape(service)} unreachable \(TimeoutError: [^\n]+\); "
        "streams catch up when it is back",
        gone,
    ), gone
    assert back == f"live updates: {service} is back"
    listener.close()


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a condition under a deadline
