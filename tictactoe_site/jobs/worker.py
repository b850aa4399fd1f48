"""The background task worker: `python -m tictactoe_site.jobs.worker`.

`make run` and `make serve` start one beside the web processes
(tictactoe_site.server.serve, TASK_WORKERS); under a process manager, run it as its own
service. It is django-tasks-db's `db_worker` (Django's tasks framework with the
database as the queue, so SQLite and PostgreSQL need nothing else), started
after putting back in the queue what an earlier run of the same worker id left
running, and with the heartbeat going (tictactoe_site.jobs.heartbeat). The id is
TASK_WORKER_ID, or by default one of its own for each worker of each host,
taken over by the next worker only once this one has died
(tictactoe_site.jobs.heartbeat.worker_id).

A worker the server started (PARENT_PID set) stops as SIGTERM would stop it
once that server is gone, when it was killed before it could stop the worker:
otherwise the worker would run on beside the next server's.

The database may go away (a restart, a failover to a standby): the worker then
logs one line, asks again every second until a primary answers (the pool finds
it: docs/deploying.md), logs one line, puts back in the queue what it had in
hand, and runs on, without a restart of the process.
"""

import logging
import os
import signal
import threading
import time

import django
from django.core.management import call_command
from django.db import DatabaseError

from tictactoe_site.lib import database_outages
from tictactoe_site.lib.env import env_float, env_int, reports_configuration_errors
from tictactoe_site.ops import metrics_dir

logger = logging.getLogger("tictactoe_site.jobs.worker")

# The environment variable through which the server names itself as the parent.
PARENT_PID = "TASK_WORKER_PARENT_PID"
# Seconds between two tries while the database is away.
RETRY_SECONDS = 1.0


def stop_when_orphaned(parent: int) -> None:
    """Poll (a second apart) for the parent to be gone, then SIGTERM this
    process: db_worker finishes the task in hand and exits."""
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


@reports_configuration_errors
def main() -> None:
    interval = env_float("TASK_POLL_SECONDS", 0.5, above=0)
    parent = env_int(PARENT_PID, 0, minimum=0)
    if parent:
        threading.Thread(target=stop_when_orphaned, args=(parent,), daemon=True).start()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
    metrics_dir.share(server_start=False)  # before anything counts
    django.setup()
    from tictactoe_site.jobs import heartbeat
    from tictactoe_site.ops import sentry  # define tasks, read settings: after setup

    sentry.start()  # failed tasks to Sentry; nothing without SENTRY_DSN

    worker = heartbeat.prepare_worker()
    while True:
        try:
            call_command(
                "db_worker",
                queue_name="*",
                worker_id=worker,
                interval=interval,
                startup_delay=False,
                reload=False,
                verbosity=0,  # one line per failure: heartbeat.log_failure
            )
            return
        except DatabaseError as exc:
            if not database_outages.is_outage(exc):
                raise
            logger.warning(
                "Task worker: the database is unreachable (%s); tasks wait.",
                type(exc).__name__,
            )
        requeued = _when_database_is_back(lambda: heartbeat.requeue_abandoned(worker))
        logger.warning(
            "Task worker: the database is back; %d task(s) in hand requeued.", requeued
        )


def _when_database_is_back(first):
    """`first()` once the database answers it, trying every RETRY_SECONDS."""
    while True:
        database_outages.discard()  # on a dead server, or on a standby
        try:
            return first()
        except DatabaseError as exc:
            if not database_outages.is_outage(exc):
                raise
        time.sleep(RETRY_SECONDS)


if __name__ == "__main__":
    main()
