"""Three app hosts behind nginx, as docs/deploying.md's "Several app hosts" runs
them, for the fleet tests (tests/fleet/test_fleet.py) and the fleet bench.

- One PostgreSQL database (fresh, next to the pass's DATABASE_URL, or on a
  private server), optionally one Redis of the test's own (`PrivateRedis`: a
  test may stop it; the machine's Redis is never touched).
- Three hosts, each `make serve` with the production variables from a copy of
  the checkout (`copy_checkout`: a test can release a changed copy), on its own
  loopback address (127.0.0.2-4, same port) with its own cache and static
  directories, as separate machines would have.
- nginx from the distribution running docs/deploying.md's ```nginx block: only the
  `server` lines of its `upstream` (the three hosts) and its `listen` line (plain
  HTTP on a free local port, without the TLS lines) are replaced. Around it the
  harness adds only its own process settings and, for the tests, an access log
  and an `X-Upstream` header naming the host that answered.

`Visitor` requests pages through nginx as a browser would; `Streams` holds many
live streams through nginx on one event loop, reconnecting as the browser's
EventSource does (Last-Event-ID, the server's retry delay).
"""

import asyncio
import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Collection
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException
from http.cookies import SimpleCookie
from pathlib import Path

import psycopg
import pytest

from .private_postgres import PrivatePostgres
from .private_redis import PrivateRedis
from .served import ROOT, ServedApp, free_port, fresh_database

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
SITE = "ttt.example.com"  # the public name, as in docs/deploying.md
CSRF = "a" * 32  # a CSRF secret of our own choosing, sent as cookie and field
BOUND = 30.0  # seconds: generous bound on any wait, never slept

# docs/deploying.md's variables, as every host gets them, but over plain HTTP:
# the TLS lines are what the test's nginx leaves out (X-Forwarded-Proto: http).
FLEET_ENV = {
    "DJANGO_ALLOWED_HOSTS": SITE,
    "DJANGO_SITE_URL": f"https://{SITE}",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "WEB_ACCESS_LOG": "1",
}


def unavailable(reason: str) -> None:
    """Skip, saying how to get what is missing; fail with FLEET_REQUIRED=1 (CI)."""
    if os.environ.get("FLEET_REQUIRED") == "1":
        pytest.fail(f"{reason} (FLEET_REQUIRED=1)")
    pytest.skip(reason)


def require_tools() -> None:
    if not Path(NGINX).exists():
        unavailable(
            "the fleet tests need nginx from the distribution: "
            "sudo apt-get install nginx-light"
        )
    if not Path(REDIS_SERVER).exists():
        unavailable(
            "the fleet tests need redis-server: sudo apt-get install redis-server"
        )


# --- nginx, configured by docs/deploying.md's block ---------------------------

NGINX_BLOCK = re.compile(r"```nginx\n(.*?)```", re.DOTALL)
UPSTREAM_SERVER = re.compile(r"^(\s*server\s+)\S+(.*)$")
LISTEN = re.compile(r"^(\s*)listen\s[^;]*;.*$")
TLS_ONLY = re.compile(r"^\s*(ssl_\w+|http2)\s")


def documented_nginx_block() -> str:
    (block,) = NGINX_BLOCK.findall((ROOT / "docs" / "deploying.md").read_text())
    return block


def fleet_nginx_block(
    block: str, upstreams: list[str], port: int, down: Collection[str] = ()
) -> str:
    """The documented block with the upstream's `server` lines naming `upstreams`
    (in order, keeping each line's parameters; those in `down` marked `down`),
    `listen` on 127.0.0.1:`port` in plain HTTP, and the TLS-only lines left out;
    every other line as written."""
    lines, servers, in_upstream = [], iter(upstreams), False
    for line in block.splitlines():
        if line.lstrip().startswith("upstream "):
            in_upstream = True
        elif in_upstream and line.strip().startswith("}"):
            in_upstream = False
        if in_upstream and UPSTREAM_SERVER.match(line):
            server = next(servers)
            line = UPSTREAM_SERVER.sub(rf"\g<1>{server}\g<2>", line)
            if server in down:
                line = line.replace(";", " down;", 1)
        elif LISTEN.match(line):
            line = LISTEN.sub(rf"\g<1>listen 127.0.0.1:{port};", line)
        elif TLS_ONLY.match(line):
            continue
        lines.append(line)
    if next(servers, None) is not None:
        raise AssertionError(
            f"the documented upstream lists fewer than {len(upstreams)}"
        )
    return "\n".join(lines) + "\n"


NGINX_MAIN = """daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
worker_processes 1;
worker_rlimit_nofile 40000;
{user}
events {{ worker_connections 16384; }}
http {{
    log_format fleet '$msec $status $request_method $uri '
                     'upstream=$upstream_addr upstream_status=$upstream_status';
    access_log {prefix}/access.log fleet;
    add_header X-Upstream $upstream_addr always;
{block}}}
"""


class Nginx:
    def __init__(self, prefix: Path, upstreams: list[str]):
        self.prefix = prefix
        self.port = free_port()
        prefix.mkdir(parents=True, exist_ok=True)
        self.upstreams = upstreams
        self.config = prefix / "nginx.conf"
        self._write_config(down=())
        self.process: subprocess.Popen | None = None

    def _write_config(self, down: Collection[str]) -> None:
        block = fleet_nginx_block(
            documented_nginx_block(), self.upstreams, self.port, down
        )
        self.config.write_text(
            NGINX_MAIN.format(
                prefix=self.prefix,
                # As root, workers would run as nobody, who cannot enter the
                # test's private temporary directory.
                user="user root;" if os.geteuid() == 0 else "",
                block=block,
            )
        )

    def _workers(self) -> set[int]:
        """The process ids of nginx's workers (the master's children)."""
        master, workers = str(self.process.pid), set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the process ended while being read
            if fields[1] == master:
                workers.add(int(stat.parent.name))
        return workers

    def reload(self, *, down: Collection[str] = ()) -> None:
        """Serve with the hosts in `down` taken out (docs/deploying.md, a
        rolling restart): returns once the workers of the previous configuration
        have exited, which nginx lets them do only when the requests they were
        passing on are answered."""
        before = self._workers()
        self._write_config(down)
        reloaded = subprocess.run(
            self._command("-s", "reload"), capture_output=True, text=True
        )
        assert reloaded.returncode == 0, reloaded.stderr
        wait_for(
            lambda: (now := self._workers()) and not now & before,
            "nginx's workers of the previous configuration to exit",
        )

    def _command(self, *extra: str) -> list[str]:
        return [NGINX, "-p", str(self.prefix), "-c", str(self.config), *extra]

    def start(self) -> None:
        test = subprocess.run(self._command("-t"), capture_output=True, text=True)
        if test.returncode != 0:
            raise RuntimeError(f"nginx refuses the configuration:\n{test.stderr}")
        self.process = subprocess.Popen(
            self._command(), stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.error_log()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)  # polling for nginx to listen, bounded
        raise RuntimeError(f"nginx did not listen:\n{self.error_log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def error_log(self) -> str:
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def answered(self) -> list[tuple[int, str, str]]:
        """(status, method, path) of every request nginx answered so far."""
        path = self.prefix / "access.log"
        return [
            (int(status), method, uri)
            for _, status, method, uri, *_ in map(str.split, path.open())
        ]


# --- Redis of the test's own ---------------------------------------------------


# --- the hosts -------------------------------------------------------------------

COPY_SKIPS = (".venv", "node_modules")


def copy_checkout(destination: Path) -> Path:
    """The checkout's tracked files (as they are in the working tree) under
    `destination`, with its .venv linked: what a release puts on a host."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if name.startswith(COPY_SKIPS) or not source.is_file():
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)  # keeps mtimes: make sees nothing to install
    (destination / ".venv").symlink_to((ROOT / ".venv").resolve())
    return destination


class FleetHost(ServedApp):
    """`make serve` on one loopback address, from `app_root`, as one host."""

    def __init__(self, *, address: str, port: int, directory: Path, **kwargs):
        directory.mkdir(parents=True, exist_ok=True)
        super().__init__(tmp_dir=directory, port=port, **kwargs)
        self.address = address
        self.env.update(FLEET_ENV, HOST=address)
        self.env["DJANGO_CACHE_DIR"] = str(directory / "cache")
        self.env["DJANGO_STATIC_ROOT"] = str(directory / "static")

    @property
    def upstream(self) -> str:
        return f"{self.address}:{self.port}"

    def release(self, app_root: Path) -> None:
        """Serve `app_root` from the next start on (a new version)."""
        self.app_root = app_root
        self.python = str(app_root / ".venv/bin/python")

    def readiness(self) -> int | None:
        return self.probe("/readyz", host=SITE)

    def send_signal(self, number: int) -> None:
        os.killpg(self.process.pid, number)

    def request(self, path: str, *, host: str, session: str | None = None):
        """GET straight to this host (as a load balancer's probe would)."""
        connection = HTTPConnection(self.address, self.port, timeout=BOUND)
        headers = {"Host": host}
        if session:
            headers["Cookie"] = f"sessionid={session}"
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def probe(self, path: str, *, host: str) -> int | None:
        try:
            return self.request(path, host=host)[0]
        except OSError:
            return None


# --- requests through nginx --------------------------------------------------------


@dataclass
class Answer:
    # 0: no whole answer: the connection failed, or the body was cut short (then
    # `upstream` names the host that began it)
    status: int
    location: str
    upstream: str  # the host that answered, as nginx names it
    body: str
    sent: float  # monotonic time the request was sent
    seconds: float
    session: str | None = None  # a session cookie the answer set

    @property
    def host(self) -> str:
        return self.upstream.rsplit(", ", 1)[-1]


class Visitor:
    """One browser, through nginx: its session cookie and CSRF token."""

    def __init__(self, port: int, session: str | None = None):
        self.port = port
        self.session = session

    def request(self, method: str, path: str, fields: dict | None = None) -> Answer:
        headers = {"Host": SITE, "Cookie": f"csrftoken={CSRF}"}
        if self.session:
            headers["Cookie"] += f"; sessionid={self.session}"
        body = None
        if method == "POST":
            headers["Origin"] = f"http://{SITE}"
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            fields = (fields or {}) | {"csrfmiddlewaretoken": CSRF}
            body = urllib.parse.urlencode(fields)
        connection = HTTPConnection("127.0.0.1", self.port, timeout=BOUND)
        sent = time.monotonic()
        raw = None
        try:
            connection.request(method, path, body=body, headers=headers)
            raw = connection.getresponse()
            text = raw.read().decode(errors="replace")
            cookies = SimpleCookie()
            for header in raw.headers.get_all("Set-Cookie") or []:
                cookies.load(header)
            session = cookies.get("sessionid")
            return Answer(
                raw.status,
                raw.headers.get("Location", ""),
                raw.headers.get("X-Upstream", ""),
                text,
                sent,
                time.monotonic() - sent,
                session.value if session else None,
            )
        except (OSError, HTTPException):  # IncompleteRead: a body cut short
            upstream = raw.headers.get("X-Upstream", "") if raw else ""
            return Answer(0, "", upstream, "", sent, time.monotonic() - sent)
        finally:
            connection.close()

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    def post(self, path: str, fields: dict | None = None) -> Answer:
        return self.request("POST", path, fields)


# --- live streams through nginx ---------------------------------------------------


@dataclass
class Connection:
    status: int
    upstream: str
    opened: float
    ended: float | None = None


@dataclass
class Stream:
    """One EventSource: its connections and the versions it saw, with when."""

    path: str
    session: str
    last_id: int | None = None
    # (version, when), appended by the streams' thread (a list: read safely
    # from another thread while it grows).
    seen: list[tuple[int, float]] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    retry_ms: int = 3000
    task: asyncio.Task | None = None

    @property
    def current(self) -> Connection | None:
        return self.connections[-1] if self.connections else None

    @property
    def open_on(self) -> str | None:
        """The host the stream is open on now; None between connections."""
        now = self.current
        if now is None or now.status != 200 or now.ended is not None:
            return None
        return now.upstream

    def first_seen(self, version: int) -> float | None:
        """When the stream first announced `version` or a later one."""
        return next((at for seen, at in self.seen[:] if seen >= version), None)


class Streams:
    """Many live streams through nginx, read on one event loop in a thread.

    `reconnect`: as a browser does (after the server's `retry:` delay with
    Last-Event-ID when a stream ends; after 1 s, doubling, when refused);
    without it a stream stays ended, for tests that a stream ends.
    """

    def __init__(self, port: int, *, reconnect: bool = True):
        self.port = port
        self.reconnect = reconnect
        self.streams: list[Stream] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def open(self, path: str, session: str) -> Stream:
        stream = Stream(path, session)
        self.streams.append(stream)

        def begin():
            stream.task = self.loop.create_task(self._run(stream))

        self.loop.call_soon_threadsafe(begin)
        return stream

    def open_spread(self, paths_and_sessions, hosts: int) -> list[Stream]:
        """Open one stream per (path, session), each once its predecessor
        answered, so nginx's round robin spreads them over the hosts."""
        opened = []
        for path, session in paths_and_sessions:
            stream = self.open(path, session)
            wait_for(lambda s=stream: s.current is not None, "a stream answered")
            opened.append(stream)
        on = {stream.open_on for stream in opened}
        assert len(on - {None}) == hosts, [s.connections for s in opened]
        return opened

    async def _run(self, stream: Stream) -> None:
        refused_delay = 1.0
        while True:
            status = await self._connect(stream)
            if not self.reconnect:
                return
            if status == 200:
                refused_delay = 1.0
                await asyncio.sleep(stream.retry_ms / 1000)
            else:  # as the page's script retries a refused stream
                await asyncio.sleep(refused_delay * random.uniform(0.5, 1.5))
                refused_delay = min(refused_delay * 2, 30.0)

    async def _connect(self, stream: Stream) -> int:
        """One connection, read to its end; its status (0: no answer)."""
        writer = None
        connection = Connection(0, "", time.monotonic())
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            last = stream.last_id
            writer.write(
                (
                    f"GET {stream.path} HTTP/1.0\r\nHost: {SITE}\r\n"
                    f"Cookie: sessionid={stream.session}\r\n"
                    "Accept: text/event-stream\r\n"
                    + (f"Last-Event-ID: {last}\r\n" if last is not None else "")
                    + "\r\n"
                ).encode()
            )
            status_line = await reader.readline()
            connection.status = int(status_line.split()[1])
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "x-upstream":
                    connection.upstream = value.strip().rsplit(", ", 1)[-1]
            stream.connections.append(connection)
            if connection.status != 200:
                return connection.status
            while line := await reader.readline():
                text = line.decode().rstrip("\r\n")
                if text.startswith("id: "):
                    version = int(text[4:])
                    stream.seen.append((version, time.monotonic()))
                    stream.last_id = version
                elif text.startswith("retry: "):
                    stream.retry_ms = int(text[7:])
            return 200
        except (OSError, ValueError, IndexError):
            if connection not in stream.connections:
                stream.connections.append(connection)
            return connection.status
        finally:
            connection.ended = time.monotonic()
            if writer is not None:
                writer.close()

    def close(self) -> None:
        """Hang up every stream and stop the loop (bounded)."""

        async def cancel():
            tasks = [stream.task for stream in self.streams if stream.task]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel(), self.loop).result(timeout=BOUND)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=BOUND)
        self.loop.close()


def until(condition, timeout: float = BOUND) -> float | None:
    """Poll `condition` until true (bounded): the monotonic time it became
    so, or None if it did not in `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)  # polling a condition, bounded by the deadline
    return time.monotonic()


def wait_for(condition, what: str, timeout: float = BOUND) -> float:
    """`until`, failing the test with `what` when the time runs out."""
    became = until(condition, timeout)
    if became is None:
        raise AssertionError(f"timed out waiting for {what}")
    return became


# --- the fleet ---------------------------------------------------------------------

# Players and games, made through the services (SESSIONS_SCRIPT's way of
# logging in); one game between each pair, x to move. Without a password
# (None: unusable) nothing is hashed, which would take most of the time.
PLAYERS_SCRIPT = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from games import services

def session_for(user):
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key

games = []
for i in range(COUNT):
    x = get_user_model().objects.create_user(f"PREFIX{i}x", password=PASSWORD)
    o = get_user_model().objects.create_user(f"PREFIX{i}o", password=PASSWORD)
    game = services.create_game(creator=x, opponent=o, side="x")
    games.append({"id": game.pk, "x": session_for(x), "o": session_for(o),
                  "x_name": x.username, "o_name": o.username})
print(json.dumps(games))
"""

# A drawn game, cell by cell: nine moves, x first, nobody wins before the last.
DRAW = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]


@dataclass
class Game:
    id: int
    x: str  # x's session key
    o: str
    x_name: str
    o_name: str

    def events(self) -> str:
        return f"/games/{self.id}/events/"

    def mover(self, ply: int) -> str:
        return self.x if ply % 2 == 0 else self.o


class Fleet:
    def __init__(
        self,
        database_url: str,
        directory: Path,
        redis: PrivateRedis | None,
        env: dict[str, str],
        postgres: PrivatePostgres | None = None,
    ):
        self.database_url = database_url
        self.directory = directory
        self.redis = redis
        self.postgres = postgres  # the server of its own its database is on, if any
        self.release = copy_checkout(directory / "release-1")
        port = free_port()
        self.hosts = [
            FleetHost(
                address=address,
                port=port,
                directory=directory / f"host-{address}",
                database_url=database_url,
                app_root=self.release,
            )
            for address in ADDRESSES
        ]
        for host in self.hosts:
            host.env.update(env)
            if redis is not None:
                host.env["REDIS_URL"] = redis.url
        self.nginx = Nginx(directory / "nginx", [h.upstream for h in self.hosts])

    @property
    def port(self) -> int:
        return self.nginx.port

    def start(self) -> None:
        """Migrate once (the release step), then start every host and nginx."""
        result = self.hosts[0].manage("migrate", "--noinput", "-v", "0")
        assert result.returncode == 0, result.stderr
        for host in self.hosts:
            host.launch()
        for host in self.hosts:
            host.wait_ready()
        self.nginx.start()

    def stop(self) -> None:
        self.nginx.stop()
        for host in self.hosts:
            host.stop()

    def in_rotation(self) -> None:
        """Wait (bounded) until nginx sends requests to every host: a host
        just started may still be left out for its `fail_timeout`."""
        answered = set()

        def every_host() -> bool:
            answered.add(self.visitor().get("/livez").host)
            return len(answered) == len(self.hosts)

        wait_for(every_host, "nginx to send requests to every host")

    def visitor(self, session: str | None = None) -> Visitor:
        return Visitor(self.port, session)

    def streams(self, *, reconnect: bool = True) -> Streams:
        return Streams(self.port, reconnect=reconnect)

    def games(self, prefix: str, count: int, password: str | None = None) -> list[Game]:
        script = (
            PLAYERS_SCRIPT.replace("PREFIX", prefix)
            .replace("COUNT", str(count))
            .replace("PASSWORD", repr(password))
        )
        result = self.hosts[0].manage("shell", "-c", script)
        assert result.returncode == 0, result.stderr
        return [Game(**game) for game in json.loads(result.stdout.splitlines()[-1])]

    def query(self, sql: str, params=()) -> list[tuple]:
        with psycopg.connect(self.database_url, connect_timeout=5) as connection:
            return connection.execute(sql, params).fetchall()

    def versions(self, games: list[Game]) -> dict[int, int]:
        rows = self.query(
            "SELECT id, version FROM games_game WHERE id = ANY(%s)",
            [[game.id for game in games]],
        )
        return dict(rows)

    def moves(self, games: list[Game]) -> dict[tuple[int, int], tuple[int, int]]:
        """(game id, ply) -> (row, col) of every stored move of `games`."""
        rows = self.query(
            "SELECT game_id, sequence_number, row, col FROM games_move"
            " WHERE game_id = ANY(%s)",
            [[game.id for game in games]],
        )
        return {(game, number - 1): (row, col) for game, number, row, col in rows}

    def host_named(self, upstream: str) -> FleetHost:
        (host,) = [h for h in self.hosts if h.upstream == upstream]
        return host


def move_seen(fleet: Fleet, game: Game, ply: int, watching, timeout: float):
    """`game`'s move `ply` of DRAW, sent through nginx; once it is stored, wait
    (at most `timeout` s) until every stream of `watching` has announced it.
    The move's answer and, per stream, the seconds from sending to the
    announcement (None: not within `timeout`; [] when the move was refused)."""
    row, col = DRAW[ply]
    answer = fleet.visitor(game.mover(ply)).post(
        f"/games/{game.id}/move/", {"row": row, "col": col, "ply": ply}
    )
    if answer.status != 302:
        return answer, []
    version = fleet.versions([game])[game.id]
    until(lambda: all(stream.first_seen(version) for stream in watching), timeout)
    seen = [stream.first_seen(version) for stream in watching]
    return answer, [None if at is None else at - answer.sent for at in seen]


@contextmanager
def running_fleet(
    directory: Path,
    name: str,
    *,
    redis: bool,
    postgres: PrivatePostgres | None = None,
    database_url=None,
    env=None,
):
    """A started fleet on a fresh database (of the pass's server, or of the
    private server `postgres`) or on `database_url`, with `env` added to every
    host's variables; stopped after."""
    require_tools()
    with ExitStack() as stack:
        if postgres is not None:
            database_url = postgres.create_database(name)
        elif database_url is None:
            database_url = stack.enter_context(
                fresh_database(directory, name, migrated=True)
            )
        private = None
        if redis:
            private = PrivateRedis()
            private.start()
            stack.callback(private.kill)
        fleet = Fleet(database_url, directory, private, env or {}, postgres)
        stack.callback(fleet.stop)
        fleet.start()
        yield fleet


class Player(threading.Thread):
    """Plays `games` through nginx, one move at a time round the games, as
    browsers would: each move's form carries its ply; a move whose answer was
    lost (nginx's 502, a dropped connection) is sent again with the same ply
    until the app answers it (302: applied; 409: refused, the board moved)."""

    def __init__(self, port: int, games: list[Game], pause: float = 0.02):
        super().__init__(daemon=True)
        self.port = port
        self.games = games
        self.pause = pause
        self.stopping = threading.Event()
        self.acknowledged: dict[tuple[int, int], tuple[int, int]] = {}
        self.resent: list[tuple[tuple[int, int], list[int]]] = []  # statuses
        self.answers: list[Answer] = []
        self.plies = {game.id: 0 for game in games}
        self.waiting_since: float | None = None  # the move in flight, if any

    def run(self) -> None:
        while not self.stopping.is_set():
            playing = [g for g in self.games if self.plies[g.id] < len(DRAW)]
            if not playing:
                return
            for game in playing:
                if self.stopping.is_set():
                    return
                self._move(game)
            self.stopping.wait(self.pause)

    def _move(self, game: Game) -> None:
        ply = self.plies[game.id]
        row, col = DRAW[ply]
        visitor = Visitor(self.port, game.mover(ply))
        fields = {"row": row, "col": col, "ply": ply}
        path = f"/games/{game.id}/move/"
        statuses = []
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            self.waiting_since = time.monotonic()
            answer = visitor.post(path, fields)
            self.waiting_since = None
            self.answers.append(answer)
            statuses.append(answer.status)
            if answer.status in (302, 409):
                break
            time.sleep(0.2)  # a browser's resend after a failed POST, bounded
        if len(statuses) > 1:
            self.resent.append(((game.id, ply), statuses))
        if statuses[-1] == 302:
            self.acknowledged[(game.id, ply)] = (row, col)
        self.plies[game.id] = ply + 1

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=BOUND)


class Reader(threading.Thread):
    """Loads game pages through nginx in a loop, and with `assets` every
    static file each page names; records every answer."""

    ASSET = re.compile(r'(?:href|src)="(/static/[^"]+)"')

    def __init__(self, port: int, games: list[Game], *, assets: bool = False):
        super().__init__(daemon=True)
        self.port = port
        self.games = games
        self.assets = assets
        self.stopping = threading.Event()
        self.pages: list[Answer] = []
        self.asset_answers: list[tuple[str, Answer]] = []  # (path, answer)

    def run(self) -> None:
        while not self.stopping.is_set():
            for game in self.games:
                if self.stopping.is_set():
                    return
                answer = Visitor(self.port, game.x).get(f"/games/{game.id}/")
                self.pages.append(answer)
                if self.assets and answer.status == 200:
                    for path in sorted(set(self.ASSET.findall(answer.body))):
                        fetched = Visitor(self.port).get(path)
                        self.asset_answers.append((path, fetched))

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=BOUND)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
