"""One run at a time of a periodic job, across every worker of every host.

`running_alone(name)` yields True to the one caller holding the job's lock and
False to any other while it does; the caller that gets False skips its run
(the one running does the work). The lock is freed when the block ends, and
by the database or the kernel when the process dies however it dies, so a
worker killed mid-run never leaves the job stuck.

- PostgreSQL: a session-level advisory lock on Django's connection, released at
  the end of the block (the server frees it too when the connection closes).
- SQLite (one host): an exclusive flock on `<database file>.<name>-lock`, as the
  migrate command locks (games/management/commands/migrate.py). An in-memory
  database has nothing to share: one process, always alone.
"""

import contextlib
import fcntl
import hashlib
from collections.abc import Iterator
from pathlib import Path

from django.db import connection


def advisory_key(name: str) -> int:
    """The advisory lock's 64-bit key for `name`: stable across processes and
    hosts, unlike Python's hash()."""
    digest = hashlib.sha256(f"tictactoe.job.{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def _postgresql(name: str) -> Iterator[bool]:
    key = advisory_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        (taken,) = cursor.fetchone()
    if not taken:
        yield False
        return
    try:
        yield True
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


@contextlib.contextmanager
def _sqlite(name: str) -> Iterator[bool]:
    if connection.is_in_memory_db():
        yield True
        return
    path = Path(f"{connection.settings_dict['NAME']}.{name}-lock")
    with path.open("a") as lock:  # the lock goes when the file closes
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process runs the job
            taken = False
        else:
            taken = True
        yield taken


def running_alone(name: str) -> contextlib.AbstractContextManager[bool]:
    if connection.vendor == "postgresql":
        return _postgresql(name)
    if connection.vendor == "sqlite":
        return _sqlite(name)
    raise NotImplementedError(f"no job lock for {connection.vendor}")
