"""Real server processes on one database and broker, as if on several hosts, for
the live-update tests: `serving(backend, count)` starts them (python -m
tictactoe_site.server.serve with the tests' settings, one worker process each unless
WEB_CONCURRENCY says otherwise), `games` makes users, sessions and games through
the services, `get` reads a page, `play` POSTs a move as the browser's form
would and `Watcher` reads one stream in a thread.

The `backend` fixture (registered in tests/conftest.py) gives what the processes
share: a SQLite file (news by local sockets), a PostgreSQL database
(LISTEN/NOTIFY) or PostgreSQL with Redis (pub/sub), already migrated (a copy of
a database migrated once per test process, so `serving` need not migrate it);
`database` gives the same to a fixture of wider scope. A missing PostgreSQL or
Redis skips the test and says so; with REQUIRE_POSTGRES=1 or REQUIRE_REDIS=1
(CI) it fails instead.
"""

import atexit
import functools
import itertools
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from contextlib import contextmanager
from http.client import HTTPConnection
from pathlib import Path

import pytest

from . import served
from .asgi import BOUND

POSTGRES_URL = os.environ.get(
    "LIVE_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)


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


PREFIX = os.environ.get("LIVE_TEST_DB_PREFIX", "test_live_")


def _postgres_url(name: str) -> str:
    return POSTGRES_URL.rsplit("/", 1)[0] + "/" + name


# The DATABASE_URLs of the databases copied from a migrated template: `serving`
# does not migrate them again (0.8 s of CPU for a migrate that finds nothing to
# do, 2.9 s on an empty database).
_migrated: set[str] = set()


@functools.cache
def _migrated_template(engine: str) -> str:
    """A database of `engine` ("sqlite" or "postgresql", the latter on
    POSTGRES_URL's server) migrated once per test process with the servers'
    variables (tests.settings): its URL. Named apart from those of any other
    test process (pytest-xdist's, another run's), and removed at exit. The
    migrations make no SiteIdentity row, so each copy still draws a Redis
    channel of its own."""
    if engine == "sqlite":
        directory = tempfile.mkdtemp(prefix="ttt-live-template-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        url = f"sqlite:///{directory}/template.sqlite3"
    else:
        name = f"{PREFIX}template{served._worker_suffix()}_{secrets.token_hex(4)}"
        served.admin_sql(f'CREATE DATABASE "{name}"', POSTGRES_URL)
        atexit.register(
            served.admin_sql,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            POSTGRES_URL,
        )
        url = _postgres_url(name)
    manage({"DATABASE_URL": url}, "migrate", "--noinput", "-v", "0")
    return url


@contextmanager
def _postgres_database():
    """A fresh PostgreSQL database, a copy of the migrated template (skipped, and
    said so, only when PostgreSQL is down)."""
    import psycopg

    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        _unavailable(
            f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}", "REQUIRE_POSTGRES"
        )
    with admin:
        template = _migrated_template("postgresql").rsplit("/", 1)[1]
        name = f"{PREFIX}{secrets.token_hex(4)}"
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        url = _postgres_url(name)
        _migrated.add(url)
        try:
            yield url
        finally:
            _migrated.discard(url)
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _sqlite_database(path: Path) -> str:
    """A copy of the migrated SQLite template at `path` (SQLite's backup API): its
    URL."""
    served.copy_sqlite(_migrated_template("sqlite").removeprefix("sqlite:///"), path)
    url = f"sqlite:///{path}"
    _migrated.add(url)
    return url


def other_spelling(database_url: str) -> str | None:
    """The same PostgreSQL database, its host spelled the other way
    (127.0.0.1 and localhost): as two hosts' variables may name it. None when
    no other spelling is known (SQLite, another host)."""
    parts = urllib.parse.urlsplit(database_url)
    other = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}.get(parts.hostname)
    if other is None:
        return None
    return parts._replace(netloc=parts.netloc.replace(parts.hostname, other)).geturl()


def respelled(database_url: str) -> str:
    """`other_spelling`, or a skip that says there is none."""
    other = other_spelling(database_url)
    if other is None:
        pytest.skip(f"no other spelling known for the host of {database_url}")
    return other


def _redis_reachable() -> None:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        _unavailable(f"Redis unreachable at {REDIS_URL}: {exc}", "REQUIRE_REDIS")


@contextmanager
def database(kind: str, directory: Path):
    """What the server processes share, as their variables: a SQLite file in
    `directory` (news by local sockets), a PostgreSQL database (LISTEN/NOTIFY),
    or a PostgreSQL database with REDIS_URL (Redis pub/sub) for `kind` "sqlite",
    "postgresql" or "redis"; migrated."""
    if kind == "sqlite":
        yield {"DATABASE_URL": _sqlite_database(directory / "live.sqlite3")}
        return
    if kind == "redis":
        _redis_reachable()
    with _postgres_database() as database_url:
        env = {"DATABASE_URL": database_url}
        if kind == "redis":
            env["REDIS_URL"] = REDIS_URL
        yield env


@pytest.fixture
def backend(request, tmp_path):
    """`database(kind)` for one test, the kind its parameter."""
    with database(request.param, tmp_path) as env:
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


def manage(backend: dict, *args: str) -> str:
    """manage.py on the servers' database, with their variables; its output."""
    result = served.manage(*args, env=_server_env(backend, 0))
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextmanager
def serving(backend: dict, count: int, *, log=subprocess.DEVNULL, each=(), **env: str):
    """`count` servers (one worker process each, unless WEB_CONCURRENCY is given)
    on one database, as if on `count` hosts; yields their ports and processes.
    `log` is one file for all their output or a list of one file each; `each`
    a list of the variables of each server that differ (e.g. how DATABASE_URL
    spells the database). A database the `backend` fixture made is migrated
    already; any other is migrated first."""
    if backend["DATABASE_URL"] not in _migrated:
        manage(backend, "migrate", "--noinput", "-v", "0")
    ports = [served.free_port() for _ in range(count)]
    logs = log if isinstance(log, list) else [log] * count
    own = list(each) or [{}] * count
    servers = [
        subprocess.Popen(
            [sys.executable, "-m", "tictactoe_site.server.serve"],
            cwd=served.ROOT,
            env=_server_env(backend, port) | env | variables,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        for port, output, variables in zip(ports, logs, own, strict=True)
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
# between alice and bob, made through the services; printed as JSON. Each name
# ends with SUFFIX; the sessions are keyed by the name without it.
GAMES_SCRIPT = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from games import services

users, sessions = {}, {}
for name in ("alice", "bob", "carol"):
    users[name] = get_user_model().objects.create_user(name + SUFFIX)
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


_suffixes = itertools.count(1)


def fresh_suffix() -> str:
    """A suffix for the names of one test's users, new in this test process:
    tests that share a database (and its servers) each have their own alice,
    bob and carol."""
    return f"_{next(_suffixes)}"


def games(
    backend: dict, count: int, *, suffix: str = ""
) -> tuple[dict, dict[int, int]]:
    """Users alice, bob and carol (each name + `suffix`), a session each, and
    `count` games of alice against bob: their sessions (keyed by the names
    without the suffix) and the games' versions by id."""
    script = GAMES_SCRIPT.replace("COUNT", str(count)).replace("SUFFIX", repr(suffix))
    output = manage(backend, "shell", "-c", script)
    made = json.loads(output.strip().splitlines()[-1])
    return made["sessions"], {int(k): v for k, v in made["games"].items()}


def get(port: int, path: str, session: str) -> int:
    """A page GET with the session, as the browser would; returns the status."""
    connection = HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        connection.request("GET", path, headers={"Cookie": f"sessionid={session}"})
        return connection.getresponse().status
    finally:
        connection.close()


def post_form(port: int, path: str, session: str, fields: dict) -> int:
    """`fields` POSTed to `path` as the browser's form would, with the session
    and a CSRF token; returns the status."""
    connection = HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        connection.request(
            "POST",
            path,
            body=urllib.parse.urlencode(fields | {"csrfmiddlewaretoken": CSRF}),
            headers={
                "Cookie": f"sessionid={session}; csrftoken={CSRF}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


def play(port: int, session: str, game_id: int, row: int, col: int, ply: int):
    """A move POSTed as the browser's form would; returns the status."""
    fields = {"row": row, "col": col, "ply": ply}
    return post_form(port, f"/games/{game_id}/move/", session, fields)
