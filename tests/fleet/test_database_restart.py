"""PostgreSQL restarted under two server processes, as if on two hosts: how soon
each serves again. tests/served/test_database_outage.py plays through an outage (no
move lost, readable answers throughout); this one times the return.

A private PostgreSQL cluster (tests/support/private_postgres.py) is stopped for
20 s (a restart with crash recovery, a failover) while a player asks each
process for the lobby every second: each answers the readable 503, a move too.
Once the cluster answers again, each process serves within 5 s and refuses
nothing after (psycopg_pool's reconnection delay, doubling from 1 s, would
otherwise have grown past the outage: 9 s and more; settings.DATABASES), its
live listener is back (a move then reaches the streams on both), and each
logged one line when the database went and one when it came back.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPConnection

import pytest

from ..support import hosts
from ..support.asgi import BOUND
from ..support.hosts import Watcher
from ..support.private_postgres import private_postgres

pytestmark = [pytest.mark.processes, pytest.mark.postgresql_only]

MESSAGE = "The game server cannot reach its database right now. Try again in a moment."
STOPPED_SECONDS = 20.0  # what a doubling delay from 1 s outgrows
SERVING_AGAIN_SECONDS = 5.0
WATCHED_SECONDS = SERVING_AGAIN_SECONDS + 3


@pytest.fixture
def cluster():
    with private_postgres() as postgres:
        yield postgres


def wait_for(condition, what: str) -> None:
    """Poll `condition` until it is true, at most BOUND seconds."""
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)  # polling a condition under a deadline


def lobby(port: int, session: str) -> tuple[int, str]:
    connection = HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        connection.request("GET", "/", headers={"Cookie": f"sessionid={session}"})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


@dataclass
class Answer:
    port: int
    sent: float  # monotonic
    answered: float
    status: int
    page: str


class Players:
    """A player's lobby GET to each process every second, as players and
    probes keep asking while the database is away, each in its own thread (a
    refused one waits for the connection pool, a few seconds)."""

    def __init__(self, ports: list[int], session: str):
        self.ports = ports
        self.session = session
        self.answers: list[Answer] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.pool = ThreadPoolExecutor(16)
        self.thread = threading.Thread(target=self._ask, daemon=True)
        self.thread.start()

    def _ask(self) -> None:
        while not self.stopping.is_set():
            for port in self.ports:
                self.pool.submit(self._get, port)
            self.stopping.wait(1.0)  # the pace of the requests

    def _get(self, port: int) -> None:
        sent = time.monotonic()
        status, page = lobby(port, self.session)
        with self.lock:
            self.answers.append(Answer(port, sent, time.monotonic(), status, page))

    def served_since(self, moment: float) -> set[int]:
        with self.lock:
            return {a.port for a in self.answers if a.sent > moment and a.status == 200}

    def stop(self) -> list[Answer]:
        self.stopping.set()
        self.thread.join(BOUND)
        self.pool.shutdown(wait=True)
        return self.answers


def test_every_process_serves_within_5_seconds_of_the_database_return(
    cluster, tmp_path
):
    backend = {"DATABASE_URL": cluster.create_database("tictactoe")}
    log_paths = [tmp_path / "a.log", tmp_path / "b.log"]
    logs = [path.open("w") for path in log_paths]
    try:
        with hosts.serving(backend, 2, log=logs) as (ports, _):
            sessions, games = hosts.games(backend, 1)
            [(game_id, version)] = games.items()
            alice, bob = sessions["alice"], sessions["bob"]
            watchers = [
                Watcher(port, f"/games/{game_id}/events/?v={version}", bob)
                for port in ports
            ]
            for watcher in watchers:
                assert watcher.next() == ("status", 200)

            cluster.stop()
            stopped_at = time.monotonic()
            players = Players(ports, alice)
            try:
                for port in ports:
                    assert hosts.play(port, alice, game_id, 1, 1, 0) == 503
                # The database stays away for a set time.
                time.sleep(max(0.0, stopped_at + STOPPED_SECONDS - time.monotonic()))
                cluster.start()
                back_at = time.monotonic()
                wait_for(
                    lambda: players.served_since(back_at) == set(ports),
                    "both processes serving",
                )
                # Then watched for a while: nothing refused any more.
                time.sleep(max(0.0, back_at + WATCHED_SECONDS - time.monotonic()))
            finally:
                answers = players.stop()

            for answer in answers:
                if answer.answered < back_at:
                    assert answer.status == 503, answer
                    assert MESSAGE in answer.page, answer
            late = [
                (answer.port, round(answer.answered - back_at, 2), answer.status)
                for answer in answers
                if answer.status != 200
                and answer.answered > back_at + SERVING_AGAIN_SECONDS
            ]
            assert late == []
            for port in ports:
                assert any(
                    a.port == port
                    and a.status == 200
                    and a.answered <= back_at + SERVING_AGAIN_SECONDS
                    for a in answers
                ), port

            # Each listener is back: a move through one reaches both.
            assert hosts.play(ports[0], alice, game_id, 1, 1, 0) == 302
            deadline = time.monotonic() + BOUND
            assert [w.reaches(version + 1, deadline) for w in watchers] == [True] * 2
            for watcher in watchers:
                watcher.close()
    finally:
        for log in logs:
            log.close()

    gone = f"live updates: PostgreSQL at 127.0.0.1:{cluster.port} unreachable"
    back = f"live updates: PostgreSQL at 127.0.0.1:{cluster.port} is back"
    for path in log_paths:
        output = path.read_text()
        assert output.count(gone) == 1, output
        assert output.count(back) == 1, output
        assert "live listener" not in output, output
