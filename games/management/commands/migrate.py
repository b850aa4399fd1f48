"""`manage.py migrate` under a lock on the database: Django's own command, which
this one (an app's command of the same name wins) runs once the lock is held.

Hosts that start together on one database (`make serve` migrates at each start)
would otherwise each read "nothing applied" and create the same tables at once:
all but one fail (PostgreSQL: UniqueViolation on pg_type_typname_nsp_index). With
the lock, the others wait, then read that everything is applied and do nothing.

- PostgreSQL: a session-level advisory lock, taken on a connection of its own
  opened with the database's parameters (Django's connection, pooled or not, is
  left as it is); the server frees it when that connection ends, even when the
  process is killed. A migrate that finds it taken asks again every
  `POLL_EVERY` seconds.
- SQLite: an exclusive flock on `<database file>.migrate-lock`, freed by the
  kernel when the process ends, and after the connection closed (its
  checkpoint done). An in-memory database has nothing to share.

On PostgreSQL the migrations run with a `lock_timeout`: a schema change that
waits for a table lock (behind a long query) would make every query of that
table queue behind it, so it gives up after `LOCK_TIMEOUT` instead; run the
release again (docs/operations.md, "Migrations on large tables").
"""

import contextlib
import fcntl
import logging
import time
from pathlib import Path

from django.core.management.commands import migrate
from django.db import connections

logger = logging.getLogger("games.migrate")

# The advisory lock's key: any fixed 64-bit number no other code of this
# database locks ("tictacto" in ASCII).
LOCK_KEY = 0x7469637461637461
WAITING = "Another migrate holds the migration lock: waiting for it to finish."
LOCK_TIMEOUT = "5s"
# A migrate waiting for another asks again this often (seconds), rather than
# wait in pg_advisory_lock: that one statement would stay open all the while,
# and the other's CREATE INDEX CONCURRENTLY waits for every open transaction
# to end (seen: the two waited on each other until the lock_timeout).
POLL_EVERY = 0.5


def _try_lock(own) -> bool:
    return own.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY]).fetchone()[0]


@contextlib.contextmanager
def postgresql_lock(connection):
    params = connection.get_connection_params()
    # The lock goes with the connection, closed at the end of the block.
    with connection.Database.connect(**params, autocommit=True) as own:
        if not _try_lock(own):
            logger.info(WAITING)
            while not _try_lock(own):
                time.sleep(POLL_EVERY)
        yield


@contextlib.contextmanager
def sqlite_lock(connection):
    if connection.is_in_memory_db():
        yield
        return
    path = Path(str(connection.settings_dict["NAME"]) + ".migrate-lock")
    with path.open("a") as lock:  # the lock goes when the file closes
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info(WAITING)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # The last connection to a WAL database checkpoints as it closes,
            # under an exclusive lock: done before the next migrate may open
            # the file, whose first statement would otherwise meet that lock.
            connection.close()


@contextlib.contextmanager
def lock_timeout(connection):
    """`LOCK_TIMEOUT` on the connection the migrations run on (PostgreSQL),
    reset after them: a test run's connection goes on to other work."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', %s, false)", [LOCK_TIMEOUT])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


def migration_lock(connection):
    if connection.vendor == "postgresql":
        return postgresql_lock(connection)
    if connection.vendor == "sqlite":
        return sqlite_lock(connection)
    return contextlib.nullcontext()


class Command(migrate.Command):
    def handle(self, *args, **options):
        connection = connections[options["database"]]
        with migration_lock(connection), lock_timeout(connection):
            return super().handle(*args, **options)
