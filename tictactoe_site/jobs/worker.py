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
"""

import os
import signal
import threading
import time

import django
from django.core.management import call_command

from tictactoe_site.lib.env import env_float, env_int, reports_configuration_errors
from tictactoe_site.ops import metrics_dir

# The environment variable through which the server names itself as the parent.
PARENT_PID = "TASK_WORKER_PARENT_PID"


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
    call_command(
        "db_worker",
        queue_name="*",
        worker_id=worker,
        interval=interval,
        startup_delay=False,
        reload=False,
        verbosity=0,  # one line per failure comes from heartbeat.log_failure
    )


if __name__ == "__main__":
    main()
