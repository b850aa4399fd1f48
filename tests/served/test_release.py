"""A release is one step and migrations never race: every `manage.py migrate`
(`make release`, `make serve`) takes a lock on the database first, so hosts that
start together on a fresh database migrate it once and all serve; production
targets install the runtime dependencies only.

Migrations run for real in subprocesses on a fresh database of the pass's engine
(tests/support/served.py)."""

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import psycopg
import pytest
from django.db.migrations.loader import MigrationLoader

from ..support.checkout import stand_in_checkout
from ..support.served import (
    ROOT,
    ServedApp,
    fresh_database,
    migrate_env,
    on_postgresql,
)

pytestmark = pytest.mark.processes

DEADLINE = 120  # seconds: generous for a loaded machine; the waits end on events
WAITING = "Another migrate holds the migration lock: waiting for it to finish."


def start_migrate(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def applied(database_url: str) -> list[tuple[str, str]]:
    """Every row of django_migrations, as (app, name), duplicates kept."""
    if database_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as connection:
            rows = connection.execute("SELECT app, name FROM django_migrations")
            return sorted(rows.fetchall())
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT app, name FROM django_migrations")
        return sorted(rows.fetchall())


def on_disk() -> list[tuple[str, str]]:
    """Every migration of every installed app, as the files define them."""
    return sorted(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)


def test_two_migrates_at_once_on_a_fresh_database_migrate_it_once(tmp_path):
    with fresh_database(tmp_path, "release_race") as database_url:
        env = migrate_env(database_url, tmp_path)
        first, second = start_migrate(env), start_migrate(env)
        outcomes = [
            (*process.communicate(timeout=DEADLINE), process.returncode)
            for process in (first, second)
        ]
        assert [code for _, _, code in outcomes] == [0, 0], "\n".join(
            err for _, err, _ in outcomes
        )
        assert applied(database_url) == on_disk()


def hold_lock(database_url: str):
    """Take the migration lock as another migrate would hold it; returns a
    function that releases it."""
    if database_url.startswith("sqlite:///"):
        import fcntl

        path = Path(database_url.removeprefix("sqlite:///") + ".migrate-lock")
        lock = path.open("a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        return lock.close
    from games.management.commands.migrate import LOCK_KEY

    connection = psycopg.connect(database_url, autocommit=True)
    connection.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    return connection.close


def migrations_table_exists(database_url: str) -> bool:
    """Whether a migrate has begun on this database: its first write creates
    django_migrations."""
    if database_url.startswith("sqlite:///"):
        import sqlite3

        path = database_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path)) as connection:
            row = connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'django_migrations'"
            ).fetchone()
            return row[0] == 1
    with psycopg.connect(database_url) as connection:
        row = connection.execute("SELECT to_regclass('django_migrations')").fetchone()
        return row[0] is not None


def server_time(database_url: str):
    """PostgreSQL's clock now (None with SQLite, which has no server)."""
    if database_url.startswith("sqlite:///"):
        return None
    with psycopg.connect(database_url) as connection:
        return connection.execute("SELECT clock_timestamp()").fetchone()[0]


# Another connection to this database that asked for the lock after a time.
ASKED_AGAIN = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND query LIKE 'SELECT pg_try_advisory_lock(%%' AND query_start > %s
"""


def waits_on_the_lock(process: subprocess.Popen, database_url: str, since) -> bool:
    """Whether `process` is waiting for the migration lock, as the kernel or the
    server shows it. SQLite: its flock request queued on the lock file
    (/proc/locks marks a waiter "->"). PostgreSQL: its pg_try_advisory_lock
    asked again after `since` (the server's clock), the loop a waiting migrate
    polls in."""
    if database_url.startswith("sqlite:///"):
        lock = Path(database_url.removeprefix("sqlite:///") + ".migrate-lock")
        inode = lock.stat().st_ino
        waiter = ["->", "FLOCK", "ADVISORY", "WRITE", str(process.pid)]
        return any(
            fields[1:6] == waiter and fields[6].endswith(f":{inode}")
            for fields in map(str.split, Path("/proc/locks").read_text().splitlines())
        )
    with psycopg.connect(database_url) as connection:
        row = connection.execute(ASKED_AGAIN, [since]).fetchone()
        return row[0] > 0


def test_a_migrate_waits_for_the_one_holding_the_lock_and_says_so(tmp_path):
    with fresh_database(tmp_path, "release_wait") as database_url:
        if not on_postgresql():
            Path(database_url.removeprefix("sqlite:///")).touch()
        release = hold_lock(database_url)
        env = migrate_env(database_url, tmp_path) | {"GAMES_LOG_LEVEL": "INFO"}
        waiting = start_migrate(env)
        try:
            line = waiting.stderr.readline()  # blocks until the command logs
            assert line.rstrip().endswith(f"INFO games.migrate {WAITING}")
            since = server_time(database_url)
            # Not the log line alone: the kernel or the server shows the migrate
            # waiting, and until then it has neither begun nor ended.
            deadline = time.monotonic() + DEADLINE
            while not waits_on_the_lock(waiting, database_url, since):
                assert waiting.poll() is None, "it ended while the lock was held"
                assert not migrations_table_exists(database_url), "it began"
                assert time.monotonic() < deadline, "it never waited on the lock"
                time.sleep(0.05)  # polling a condition under a deadline
            assert waiting.poll() is None
            assert not migrations_table_exists(database_url)
        finally:
            release()
        assert waiting.wait(DEADLINE) == 0
        assert applied(database_url) == on_disk()


def test_hosts_started_together_on_a_fresh_database_all_serve(tmp_path):
    """Two `make serve` (as two hosts: each its own cache and static files) at
    the same moment on one fresh database: each migrates under the lock, both
    serve."""
    with fresh_database(tmp_path, "release_serve") as database_url:
        apps = []
        for host in ("a", "b"):
            (tmp_path / host).mkdir()
            apps.append(
                ServedApp(database_url=database_url, tmp_dir=tmp_path / host, workers=1)
            )
        together = threading.Barrier(len(apps))
        failures: list[str] = []

        def start(app: ServedApp) -> None:
            together.wait()
            try:
                app.start()
            except RuntimeError as error:
                failures.append(str(error))

        threads = [threading.Thread(target=start, args=(app,)) for app in apps]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert failures == []
            assert [app.browser().get("/healthz").status for app in apps] == [200, 200]
        finally:
            for app in apps:
                app.stop()
        assert applied(database_url) == on_disk()


# A stand-in for the checkout's .venv/bin/python: it logs each call's arguments
# (one JSON list a line) and runs only the Makefile's own `-c` snippets for real.
LOG_ARGUMENTS = "import json, sys; print(json.dumps(sys.argv[1:]))"
STAND_IN = f"""#!/bin/sh
{sys.executable} -c '{LOG_ARGUMENTS}' "$@" >> "$RUNS_LOG"
[ "$1" = -c ] && exec {sys.executable} "$@"
exit 0
"""
PIP = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The Makefile and the dependency files, a stand-in Python, nothing installed."""
    return stand_in_checkout(tmp_path, STAND_IN)


def make(checkout: Path, target: str, **env: str) -> list[list[str]]:
    """`make target` in `checkout`; each call of the stand-in, `-c` ones left out."""
    log = checkout / "runs.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=checkout,
        env={"PATH": os.environ["PATH"], "HOME": str(checkout), "RUNS_LOG": str(log)}
        | env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [call for call in calls if call[0] != "-c"]


def pyproject_dependencies() -> tuple[list[str], list[str]]:
    """pyproject.toml's runtime dependencies and its `dev` extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["dependencies"], project["optional-dependencies"]["dev"]


def name(requirement: str) -> str:
    return requirement.split("==")[0]


def test_a_release_installs_the_runtime_dependencies_only_then_migrates(checkout):
    runtime, dev = pyproject_dependencies()
    test_tools = {"pytest", "playwright", "gunicorn"}
    assert test_tools <= {name(requirement) for requirement in dev}
    assert not test_tools & {name(requirement) for requirement in runtime}
    key = {"DJANGO_SECRET_KEY": "a-test-key"}

    assert make(checkout, "release", **key) == [
        [*PIP, "-c", "requirements.lock", *runtime],
        ["manage.py", "migrate", "--noinput"],
        ["manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
    ]
    # Installed once: the next release and `make serve` only migrate.
    assert make(checkout, "serve", **key) == [
        ["manage.py", "migrate", "--noinput"],
        ["manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        ["-m", "tictactoe_site.server.serve"],
    ]
    # Development targets install everything, test tools included.
    assert make(checkout, "install") == [
        [*PIP, "-c", "requirements.lock", *runtime, *dev]
    ]
