"""Live updates through real server processes, as if on several hosts: a move
through one process reaches streams on the others on every broker (SQLite's
local sockets, PostgreSQL NOTIFY, Redis), and through any of four; through
Redis, also between two processes whose DATABASE_URL spell the database
differently (the channel is named in the database); a process stopped with
SIGSTOP still delivers every change to its watchers; SIGTERM with streams open
ends them cleanly. The processes and their clients:
tests/support/hosts.py. Nothing sleeps to synchronise: the one sleep keeps a
process stopped for a set time.

A broker's tests share its database and its server processes (`servers`), each
test with users and games of its own, each leaving every process serving: the
module starts 11 servers instead of 23, a second or two of CPU each. The
SIGTERM test stops a server of its own.
"""

import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.cookiejar import CookieJar

import pytest

from ..support import hosts
from ..support.asgi import BOUND
from ..support.hosts import EVERY_BROKER, SEVERAL_HOSTS, Watcher

pytestmark = pytest.mark.processes


@pytest.fixture(scope="module")
def backend(request, tmp_path_factory):
    """One database per broker for all of this module's tests (conftest's
    `backend` makes one per test): the one `servers` serves."""
    directory = tmp_path_factory.mktemp(request.param)
    with hosts.database(request.param, directory) as env:
        yield env


@dataclass
class Servers:
    ports: list[int]
    processes: list[subprocess.Popen]
    database_urls: list[str]  # each process's DATABASE_URL


@pytest.fixture(scope="module")
def servers(backend):
    """The broker's server processes, shared by this module's tests: four on
    PostgreSQL (with or without Redis), as if on four hosts, the last spelling
    the database's host the other way (127.0.0.1, localhost) as another host's
    variables may; two on SQLite, whose tests use two."""
    url = backend["DATABASE_URL"]
    if url.startswith("sqlite:"):
        urls = [url] * 2
    else:
        urls = [url] * 3 + [hosts.other_spelling(url) or url]
    each = [{"DATABASE_URL": database_url} for database_url in urls]
    # No task worker beside each server (`make serve` starts one): these tests
    # enqueue no task they wait for, and each worker is one more Django process.
    started = hosts.serving(backend, len(urls), each=each, TASK_WORKERS="0")
    with started as (ports, processes):
        yield Servers(ports, processes, urls)


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


@EVERY_BROKER
def test_a_move_through_one_server_process_reaches_a_stream_on_another(servers):
    ports = servers.ports[:2]
    a, b = (f"http://127.0.0.1:{port}" for port in ports)
    suffix = hosts.fresh_suffix()
    alice, bob = Browser(), Browser()
    for browser, name in ((alice, "alice"), (bob, "bob")):
        browser.post(
            f"{b}/accounts/signup/",
            f"{b}/accounts/signup/",
            username=name + suffix,
            password1="a-long-test-password-42",
            password2="a-long-test-password-42",
        )
    game_url, _ = alice.post(
        f"{b}/games/new/", f"{b}/", opponent="bob" + suffix, side="x"
    )
    game_path = urllib.parse.urlsplit(game_url).path

    # bob watches on server A; alice moves through server B.
    watcher = Watcher(ports[0], f"{game_path}events/?v=1", bob.cookie("sessionid"))
    assert watcher.next() == ("status", 200)
    alice.post(f"{b}{game_path}move/", f"{b}{game_path}", row=1, col=1, ply=0)
    assert watcher.next() == ("id", 2)
    _, html = bob.get(f"{a}{game_path}live/")
    assert "<li>1. X: row 2, column 2</li>" in html
    watcher.close()


STOPPED_SECONDS = 2.5  # a long pause or CPU starvation of one worker


@EVERY_BROKER
def test_every_watcher_catches_up_after_its_server_process_was_stopped(
    backend, servers
):
    """40 moves while the watchers' process cannot read: far more changes than
    the kernel queues for it (net.unix.max_dgram_qlen, 10 by default). The
    process is continued even if the test fails: the next tests use it."""
    ports, stopped = servers.ports[:2], servers.processes[0]
    sessions, games = hosts.games(backend, 40, suffix=hosts.fresh_suffix())
    watchers = {
        (game_id, name): Watcher(
            ports[0], f"/games/{game_id}/events/?v={version}", sessions[name]
        )
        for game_id, version in games.items()
        for name in ("bob", "carol")
    }
    for watcher in watchers.values():
        assert watcher.next() == ("status", 200)

    stopped.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        statuses = {
            hosts.play(ports[1], sessions["alice"], game_id, 1, 1, 0)
            for game_id in games
        }
        time.sleep(max(0.0, stopped_at + STOPPED_SECONDS - time.monotonic()))
    finally:
        stopped.send_signal(signal.SIGCONT)
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


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_stopping_the_server_ends_open_streams_cleanly_and_in_time(backend, tmp_path):
    """SIGTERM to `make serve`'s server (2 workers) with streams open: each
    stream ends properly, the log has no traceback, and the workers do not wait
    out their grace period. A server of its own (the one it stops, the log it
    reads) on the module's SQLite database."""
    log_path = tmp_path / "serve.log"
    with (
        log_path.open("w") as log,
        hosts.serving(backend, 1, log=log, WEB_CONCURRENCY="2") as (ports, servers),
    ):
        sessions, games = hosts.games(backend, 5, suffix=hosts.fresh_suffix())
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


def each_move_reaches_every_port(backend, ports: list[int], cells) -> None:
    """A new game; carol watches it on every port; its moves `cells` go
    through the ports in turn, and each reaches every watcher."""
    sessions, games = hosts.games(backend, 1, suffix=hosts.fresh_suffix())
    [(game_id, version)] = games.items()
    watchers = [
        Watcher(port, f"/games/{game_id}/events/?v={version}", sessions["carol"])
        for port in ports
    ]
    for watcher in watchers:
        assert watcher.next() == ("status", 200)
    for ply, (port, (row, col)) in enumerate(zip(ports, cells, strict=True)):
        player = sessions["alice" if ply % 2 == 0 else "bob"]
        assert hosts.play(port, player, game_id, row, col, ply) == 302
        version += 1
        heard = [watcher.next() for watcher in watchers]
        assert heard == [("id", version)] * len(ports)
    for watcher in watchers:
        watcher.close()


@SEVERAL_HOSTS
def test_a_move_through_any_of_four_server_processes_reaches_all_of_them(
    backend, servers
):
    """As if on 4 hosts: watchers on every process, a move through each in turn."""
    each_move_reaches_every_port(
        backend, servers.ports, [(0, 0), (1, 1), (0, 1), (2, 2)]
    )


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
def test_processes_that_spell_the_database_differently_hear_each_other(
    backend, servers
):
    """127.0.0.1 on one, localhost on the other: one database, one channel.
    The first and last of `servers`."""
    respelled = hosts.respelled(backend["DATABASE_URL"])
    assert [servers.database_urls[0], servers.database_urls[-1]] == [
        backend["DATABASE_URL"],
        respelled,
    ]
    ports = [servers.ports[0], servers.ports[-1]]
    each_move_reaches_every_port(backend, ports, [(0, 0), (1, 1)])
