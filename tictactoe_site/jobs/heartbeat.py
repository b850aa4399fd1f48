"""The task worker's bookkeeping (tictactoe_site.jobs.worker runs it).

- `beat`, a task that queues itself again every `BEAT_EVERY`: its latest finish
  is the worker's heartbeat in the database, which /workerz reads
  (`worker_silence`); it also does the housekeeping (tictactoe_site.jobs.housekeeping:
  expired sessions and rate-limit counts, old task results) and queues the
  periodic tasks the apps registered (tictactoe_site.jobs.periodic).
- A worker killed in the middle of a task (kill -9, a crash, a power cut) leaves
  that task marked as running: `requeue_abandoned` puts it back in the queue when
  a worker with the same id starts again, so a queued email is never lost; a
  task whose worker never comes back goes back after `ABANDONED_AFTER`.
- Each worker has an id of its own (`worker_id`), several per host included, so
  a worker started again takes back only what it itself left running, never a
  task a sibling is sending (which would send that email twice).
"""

import fcntl
import functools
import hashlib
import itertools
import logging
import os
import socket
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.tasks import TaskResultStatus, task
from django.tasks.signals import task_finished
from django.utils import timezone

from tictactoe_site.jobs import housekeeping, periodic
from tictactoe_site.lib import private_dirs
from tictactoe_site.lib.env import env_str

logger = logging.getLogger(__name__)

BEAT_EVERY = timedelta(seconds=15)
SILENT_AFTER = timedelta(minutes=1)  # /workerz answers 503 past this
ABANDONED_AFTER = timedelta(minutes=15)  # far longer than any task runs


@functools.cache
def worker_id() -> str:
    """TASK_WORKER_ID, else `<host name>-<place>-<slot>`: `place` tells apart
    the hosts' DJANGO_CACHE_DIR (several hosts may share a machine, and a host
    name), `slot` the workers of one host (`claim_slot`). At most 64 characters,
    django-tasks-db's limit."""
    if explicit := env_str("TASK_WORKER_ID"):
        return explicit[:64]
    cache_dir = Path(settings.CACHE_DIR).resolve()
    place = hashlib.sha256(os.fsencode(cache_dir)).hexdigest()[:8]
    suffix = f"-{place}-{claim_slot(cache_dir / 'workers')}"
    return socket.gethostname()[: 64 - len(suffix)] + suffix


# The lock file of this worker's slot, open (so locked) for the worker's life.
_slot_lock = None


def claim_slot(directory: Path) -> int:
    """The lowest slot number no live worker holds: an exclusive flock on
    `directory/<slot>.lock`, kept until the process ends. The kernel frees it
    when the process dies however it dies (kill -9 included), so a worker
    started again takes over the slot, and the id, of a worker that is dead,
    never of one that runs."""
    global _slot_lock
    private_dirs.make(directory)
    for slot in itertools.count():
        lock = (directory / f"{slot}.lock").open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a live worker holds it
            lock.close()
            continue
        _slot_lock = lock
        return slot


def _results():
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects


@task
def beat() -> str:
    """The heartbeat: record that the worker runs tasks, tidy, queue the next."""
    now = timezone.now()
    housekeeping.tidy(now)
    _results().filter(
        task_path=beat.module_path,
        status=TaskResultStatus.SUCCESSFUL,
        finished_at__lt=now - BEAT_EVERY * 4,
    ).delete()
    pending = _results().filter(
        task_path=beat.module_path, status=TaskResultStatus.READY
    )
    if not pending.exists():
        beat.using(run_after=now + BEAT_EVERY).enqueue()
    queue_periodic(now)
    return "beat"


def queue_periodic(now) -> None:
    """Queue each registered periodic task that is due (runs that meet anyway
    skip: tictactoe_site.jobs.job_locks)."""
    periodic.queue_due(now, _results())


def last_beat():
    """When the worker last finished a heartbeat, or None."""
    return (
        _results()
        .filter(task_path=beat.module_path, status=TaskResultStatus.SUCCESSFUL)
        .aggregate(last=Max("finished_at"))["last"]
    )


def worker_silence() -> str | None:
    """Why the task worker looks stuck or absent, or None when it beats."""
    last = last_beat()
    if last is None:
        return "no task worker has reported yet"
    silent = timezone.now() - last
    if silent > SILENT_AFTER:
        return f"the task worker has been silent for {silent.total_seconds():.0f} s"
    return None


@transaction.atomic
def requeue_abandoned(worker: str) -> int:
    """Back in the queue: tasks this worker id left running (no other live worker
    has its id), and tasks running for longer than `ABANDONED_AFTER`, far longer
    than any task runs, whose worker is taken to be gone for good."""
    stale = timezone.now() - ABANDONED_AFTER
    abandoned = [
        result.pk
        for result in _results()
        .select_for_update()
        .filter(status=TaskResultStatus.RUNNING)
        if (result.worker_ids and result.worker_ids[-1] == worker)
        or result.started_at < stale
    ]
    _results().filter(pk__in=abandoned).update(
        status=TaskResultStatus.READY, started_at=None
    )
    return len(abandoned)


def start_beating() -> None:
    pending = _results().filter(
        task_path=beat.module_path,
        status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
    )
    if not pending.exists():
        beat.enqueue()


def log_failure(sender, task_result, **kwargs) -> None:
    """One line for a task that raised (its traceback stays on its result row)."""
    if task_result.status == TaskResultStatus.FAILED:
        errors = task_result.errors
        logger.error(
            "Task %s (%s) failed: %s",
            task_result.task.module_path,
            task_result.id,
            errors[-1].exception_class_path if errors else "unknown error",
        )


def prepare_worker() -> str:
    """Before a worker starts: warn about clear-text email, requeue what it left
    running, start the heartbeat, log failed tasks. Returns the worker's id."""
    from tictactoe_site.ops.preflight import clear_text_mail_warning

    if warning := clear_text_mail_warning():
        logger.warning(warning)
    task_finished.connect(log_failure)
    worker = worker_id()
    logger.info("Task worker %s starting.", worker)
    requeued = requeue_abandoned(worker)
    if requeued:
        logger.warning("Requeued %d task(s) an earlier worker left running.", requeued)
    start_beating()
    return worker
