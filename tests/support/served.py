"""The app as production runs it, in a subprocess on its own database: `make
serve`, or the server `make serve` runs once its release step is done.

Used by every test that needs the real server (the production server under a
storm and kill -9, sessions, the task worker, live play in a browser) and by the
stall bench. The database follows the test pass: a fresh SQLite file, or a
fresh PostgreSQL database next to the one DATABASE_URL names.
"""

import atexit
import functools
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from django.conf import settings

from .browser import Browser

ROOT = Path(__file__).resolve().parents[2]
# A line of uvicorn's access log: ... - "POST /games/7/move/ HTTP/1.1" 302 Found
ACCESS_LINE = re.compile(r'"[A-Z]+ \S+ HTTP/1\.[01]" (\d{3}) ')
STARTUP_TIMEOUT = 180  # seconds; CI machines can be slow to boot the workers

# The production variables of docs/deploying.md, step 1.
PRODUCTION_ENV = {
    "DJANGO_SECRET_KEY": "x7Qp2-production-like-secret-for-tests-only-9fK3vLm8Zr4Tt",
    "DJANGO_ALLOWED_HOSTS": "ttt.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://ttt.example.com",
    "DJANGO_SITE_URL": "https://ttt.example.com",
    "DJANGO_SECURE_COOKIES": "1",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    # The tests play the TLS-terminating proxy (X-Forwarded-Proto: https).
    "DJANGO_TRUSTED_PROXY_COUNT": "1",
    "DJANGO_HSTS_SECONDS": "31536000",
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_HSTS_PRELOAD": "1",
}
# In every process the tests start: never the checkout's .env (settings.py).
NO_DOT_ENV = {"PYTHON_DOTENV_DISABLED": "1"}
# Over plain HTTP, straight to the server (no TLS proxy): for a real browser
# on http://127.0.0.1 and for the benches' own HTTP clients.
PLAIN_HTTP = {
    "DJANGO_SECURE_COOKIES": "0",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DJANGO_TRUSTED_PROXY_COUNT": "0",
    "DJANGO_HSTS_SECONDS": "0",
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "0",
    "DJANGO_HSTS_PRELOAD": "0",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run manage.py with exactly `env` (plus PATH): no leak from the test run."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], **NO_DOT_ENV, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def on_postgresql() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def _worker_suffix() -> str:
    """This test process's name under pytest-xdist ("_gw0"), or "": databases
    named after a test stay apart when two test processes run at once."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"_{worker}" if worker else ""


@functools.cache
def _migrated_template() -> str:
    """A database of the pass's engine migrated once per test process (`manage.py
    migrate` with the served apps' variables): its URL. A served app on a copy
    of it finds its migrations applied, as a host restarted in production does,
    and its `make release` costs a second of CPU less than on an empty database
    (the tests of a first release start on an empty one)."""
    directory = tempfile.mkdtemp(prefix="ttt-migrated-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    if on_postgresql():
        url = urlsplit(os.environ["DATABASE_URL"])
        name = f"{url.path.lstrip('/')}_template{_worker_suffix()}"
        admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin_sql(f'CREATE DATABASE "{name}"')
        atexit.register(admin_sql, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        template_url = urlunsplit(url._replace(path=f"/{name}"))
    else:
        template_url = f"sqlite:///{directory}/template.sqlite3"
    _manage_as_served(directory, "migrate", "--noinput", database_url=template_url)
    return template_url


@functools.cache
def collected_static() -> Path:
    """The static files, collected once per test process (`manage.py
    collectstatic` with the served apps' variables), for the servers started
    without the release step."""
    directory = tempfile.mkdtemp(prefix="ttt-static-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    _manage_as_served(
        directory,
        "collectstatic",
        "--noinput",
        "-v",
        "0",
        database_url=f"sqlite:///{directory}/unused.sqlite3",
        DJANGO_STATIC_ROOT=f"{directory}/static",
    )
    return Path(directory) / "static"


def _manage_as_served(
    directory: str, *args: str, database_url: str, **env: str
) -> None:
    """manage.py `args` with the served apps' variables (its cache directory in
    `directory`), which must succeed."""
    result = manage(
        *args,
        env={
            **PRODUCTION_ENV,
            "DJANGO_DEBUG": "0",
            "DATABASE_URL": database_url,
            "DJANGO_CACHE_DIR": f"{directory}/cache",
            **env,
        },
    )
    assert result.returncode == 0, result.stderr


def admin_sql(sql: str, server_url: str | None = None) -> None:
    """Run `sql` (CREATE or DROP DATABASE) on the PostgreSQL server of
    `server_url`, by default the pass's."""
    url = urlsplit(server_url or os.environ["DATABASE_URL"])
    admin = urlunsplit(url._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True, connect_timeout=3) as connection:
        connection.execute(sql)


def copy_sqlite(template: str, path: Path) -> None:
    """The SQLite database file `template`, copied to `path` (the backup API:
    a consistent copy)."""
    with (
        closing(sqlite3.connect(template)) as source,
        closing(sqlite3.connect(path)) as copy,
    ):
        source.backup(copy)


@contextmanager
def fresh_database(tmp_dir: Path, suffix: str, *, migrated: bool = False):
    """A DATABASE_URL for a database of the current pass's engine: empty, or
    already `migrated` (a copy of `_migrated_template`)."""
    if not on_postgresql():
        path = tmp_dir / f"{suffix}.sqlite3"
        if migrated:
            copy_sqlite(urlsplit(_migrated_template()).path, path)
        yield f"sqlite:///{path}"
        return
    url = urlsplit(os.environ["DATABASE_URL"])
    name = f"{url.path.lstrip('/')}_{suffix}{_worker_suffix()}"
    template = urlsplit(_migrated_template()).path.lstrip("/") if migrated else None
    admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin_sql(
        f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if migrated else "")
    )
    try:
        yield urlunsplit(url._replace(path=f"/{name}"))
    finally:
        admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class ServedApp:
    """`make serve` with the production variables, several server processes.

    `app_root` serves another checkout of the app (its own `make install`
    done) the same way, as the benches do to compare it with this one.
    `make_serve=False` starts the server alone, `python -m tictactoe_site.server.serve`
    as `make serve` runs it after its release step, as a host restarted within
    a release does: on a database migrated already, with the static files this
    test process collected once (`collected_static`). The release step has tests
    of its own (tests/served/test_release.py, the fleet's, `make serve` in
    tests/tictactoe_site/test_health.py); skipping it spares each start two Django
    commands.
    """

    def __init__(
        self,
        *,
        database_url: str,
        tmp_dir: Path,
        workers: int = 3,
        port: int | None = None,
        app_root: Path = ROOT,
        make_serve: bool = True,
    ):
        self.app_root = app_root
        self.make_serve = make_serve
        self.python = (
            sys.executable if app_root == ROOT else str(app_root / ".venv/bin/python")
        )
        self.port = port or free_port()
        self.log_path = tmp_dir / f"serve-{self.port}.log"
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", str(tmp_dir)),
            **PRODUCTION_ENV,
            **NO_DOT_ENV,
            "DJANGO_DEBUG": "0",  # as `make serve` sets it
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": database_url,
            "DJANGO_STATIC_ROOT": str(
                tmp_dir / "static" if make_serve else collected_static()
            ),
            "DJANGO_CACHE_DIR": str(tmp_dir / f"cache-{self.port}"),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "WEB_CONCURRENCY": str(workers),
            "GAMES_LOG_LEVEL": "WARNING",
        }
        self.process: subprocess.Popen | None = None
        self.started_at_log_size = 0

    def start(self) -> None:
        """Start the server and wait (bounded) until it is ready."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start `make serve` (or the server alone: `make_serve`); `wait_ready`
        waits for it."""
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", f"PYTHON={sys.executable}", "serve"]
            if self.make_serve
            else [self.python, "-m", "tictactoe_site.server.serve"],
            cwd=self.app_root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, for kill -9
        )
        log.close()

    def readiness(self) -> int | None:
        """/readyz's status (its database answers, its live listener is
        connected), or None when nothing answers."""
        return self.browser().readiness()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.log()}")
            if self.readiness() == 200:
                self.started_at_log_size = len(self.log())
                return
            time.sleep(0.2)  # polling for the server to boot, not for a race
        self.stop()
        raise RuntimeError(f"the server did not answer in time:\n{self.log()}")

    def kill(self) -> None:
        """kill -9 every process of the server (make, the server and its workers;
        its process group)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def answered(self) -> Counter:
        """How many answers of each status the access log records since the
        server answered its start-up readiness probe (the probes before it may
        be 503s: the live listener had not connected yet). The log is off unless
        the test sets WEB_ACCESS_LOG=1 in `env`."""
        since_start = self.log()[self.started_at_log_size :]
        return Counter(int(status) for status in ACCESS_LINE.findall(since_start))

    def browser(self, session_key: str | None = None, *, https: bool = True):
        return Browser(self.port, session_key=session_key, https=https)

    def server_pid(self) -> int:
        """tictactoe_site.server.serve's process: the child of `make`, or the process
        started (`make_serve=False`)."""
        if not self.make_serve:
            return self.process.pid
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        (server,) = [int(child) for child in path.read_text().split()]
        return server

    def worker_pids(self) -> list[int]:
        """The server's worker processes: the children of its supervisor
        (tictactoe_site.server.serve, WEB_CONCURRENCY > 1); not multiprocessing's
        resource tracker."""

        def children(pid: int) -> list[int]:
            path = Path(f"/proc/{pid}/task/{pid}/children")
            return [int(child) for child in path.read_text().split()]

        return [
            pid
            for pid in children(self.server_pid())
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        """manage.py against the server's database, with the server's variables."""
        return subprocess.run(
            [self.python, "manage.py", *args],
            cwd=self.app_root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )

    def sessions_for(self, usernames: list[str]) -> dict[str, str]:
        """Create users and log them in server-side (like Client.force_login):
        hashing 40 passwords with the production hasher would dominate the test."""
        script = SESSIONS_SCRIPT.replace("USERNAMES", repr(usernames))
        result = self.manage("shell", "-c", script)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    def stored(self) -> tuple[list[dict], list[dict]]:
        """Every stored game and move, as dumpdata sees them."""
        result = self.manage("dumpdata", "games.Game", "games.Move")
        assert result.returncode == 0, result.stderr
        rows = json.loads(result.stdout)
        games = [
            row["fields"] | {"id": row["pk"]}
            for row in rows
            if row["model"] == "games.game"
        ]
        moves = [row["fields"] for row in rows if row["model"] == "games.move"]
        return games, moves


SESSIONS_SCRIPT = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore

keys = {}
for username in USERNAMES:
    user, _ = get_user_model().objects.get_or_create(username=username)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    keys[username] = session.session_key
print(json.dumps(keys))
"""


@contextmanager
def serving(
    tmp_dir: Path, name: str, *, workers: int, make_serve: bool = False, **env: str
):
    """The server, as `make serve` runs it, on a fresh, migrated database of the
    pass's engine; with `make_serve`, `make serve` itself (ServedApp)."""
    with fresh_database(tmp_dir, name, migrated=True) as database_url:
        app = ServedApp(
            database_url=database_url,
            tmp_dir=tmp_dir,
            workers=workers,
            make_serve=make_serve,
        )
        app.env.update(env)
        app.start()
        try:
            yield app
        finally:
            app.stop()


def migrate_env(database_url: str, tmp_path: Path) -> dict[str, str]:
    """What a production `manage.py migrate` runs with against database_url."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **PRODUCTION_ENV,
        **NO_DOT_ENV,
        "DJANGO_DEBUG": "0",
        "DATABASE_URL": database_url,
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
    }
