"""The task worker as production runs it (`python -m tictactoe_site.worker`,
started and kept alive by `make serve`), sending email to a real SMTP relay on
loopback (tests/support/smtp_sink.py), on the pass's database engine."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tictactoe_site.heartbeat import requeue_abandoned

from .support import served
from .support.served import PRODUCTION_ENV, ROOT, fresh_database, serving
from .support.smtp_sink import SmtpSink

DEADLINE = 60  # seconds: generous for a loaded CI machine; the waits end on events
SUBJECTS = {f"Message {n}" for n in range(1, 6)}
SEND_FIVE = (
    "from django.core.mail import send_mail\n"
    "for n in range(1, 6):\n"
    "    send_mail(f'Message {n}', 'Body', 'noreply@example.com', ['a@example.com'])\n"
)
STATUSES = (
    "from django_tasks_db.models import DBTaskResult\n"
    "from tictactoe_site.mail import deliver\n"
    "rows = DBTaskResult.objects.filter(task_path=deliver.module_path)\n"
    "print(sorted(rows.values_list('status', flat=True)))\n"
)


def worker_env(database_url: str, sink: SmtpSink, tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **PRODUCTION_ENV,
        "DATABASE_URL": database_url,
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
        "DJANGO_EMAIL_HOST": "127.0.0.1",
        "DJANGO_EMAIL_PORT": str(sink.port),
        "TASK_WORKER_ID": "worker-under-test",
    }


def manage(env: dict[str, str], *args: str) -> str:
    result = served.manage(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def start_worker(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tictactoe_site.worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_kill_9_of_the_worker_mid_queue_loses_no_email(tmp_path):
    gate = threading.Event()
    with (
        SmtpSink(gate=gate) as sink,
        fresh_database(tmp_path, "worker_kill") as database_url,
    ):
        env = worker_env(database_url, sink, tmp_path)
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "shell", "-c", SEND_FIVE)

        worker = start_worker(env)
        try:
            # The relay has taken the first message's data and holds its reply:
            # the worker is in the middle of a send.
            assert sink.data_seen.wait(DEADLINE), "the worker never reached the relay"
        finally:
            worker.kill()
            worker.wait(DEADLINE)
        assert manage(env, "shell", "-v", "0", "-c", STATUSES).strip() == str(
            ["READY"] * 4 + ["RUNNING"]
        )

        gate.set()
        worker = start_worker(env)
        try:
            received = sink.wait_for_subjects(SUBJECTS, DEADLINE)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, errors = worker.communicate(timeout=DEADLINE)

        assert received == SUBJECTS
        assert manage(env, "shell", "-v", "0", "-c", STATUSES).strip() == str(
            ["SUCCESSFUL"] * 5
        )
        assert "Requeued 1 task(s) an earlier worker left running." in errors


@pytest.mark.django_db
def test_only_what_this_worker_or_a_long_dead_one_left_running_is_requeued():
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from tictactoe_site.mail import deliver

    def running(worker: str, minutes_ago: int):
        result = deliver.enqueue({"subject": worker})
        row = DBTaskResult.objects.get(pk=result.id)
        row.claim(worker)
        row.started_at = timezone.now() - timedelta(minutes=minutes_ago)
        row.save()
        return row.pk

    mine = running("host-a", 1)
    other_alive = running("host-b", 1)
    other_dead = running("host-b", 16)

    assert requeue_abandoned("host-a") == 2

    statuses = dict(DBTaskResult.objects.values_list("pk", "status"))
    assert statuses == {
        mine: "READY",
        other_alive: "RUNNING",
        other_dead: "READY",
    }


def children(pid: int) -> list[int]:
    """Every thread's children: the worker is started from a thread of the server."""
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def task_worker_pid(app) -> int:
    (server,) = children(app.process.pid)  # make's child: tictactoe_site.serve
    (worker,) = [
        pid
        for pid in children(server)
        if b"tictactoe_site.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    return worker


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling another process's state, not a race


def test_make_serve_starts_the_worker_again_when_it_dies(tmp_path):
    with SmtpSink() as sink:
        with serving(
            tmp_path,
            "worker_restart",
            workers=1,
            DJANGO_EMAIL_HOST="127.0.0.1",
            DJANGO_EMAIL_PORT=str(sink.port),
        ) as app:
            first = task_worker_pid(app)
            os.kill(first, signal.SIGKILL)
            wait_for(
                lambda: task_worker_pid_or_none(app) not in (None, first),
                "a new worker",
            )
            app.manage("shell", "-c", SEND_FIVE)
            assert sink.wait_for_subjects(SUBJECTS, DEADLINE) == SUBJECTS
            second = task_worker_pid(app)
            assert app.browser().get("/workerz").status == 200
        wait_for(lambda: not running(second), "make serve to stop its worker")
        assert "Task worker exited (-9); starting it again" in app.log()


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):  # it ended before, or while, read
        return False
    return state != "Z"  # a zombie has ended, its parent just has not reaped it


def task_worker_pid_or_none(app) -> int | None:
    try:
        return task_worker_pid(app)
    except (ValueError, FileNotFoundError):
        return None


def test_sigterm_to_a_single_process_server_stops_its_worker(tmp_path):
    """`make run`'s server (one process) told to stop by SIGTERM to its own
    process only, as `kill` or a container runtime does: the worker it started
    stops too, not left behind on its own."""
    with serving(tmp_path, "worker_sigterm", workers=1) as app:
        (server,) = children(app.process.pid)  # make's child: tictactoe_site.serve
        worker = task_worker_pid(app)
        os.kill(server, signal.SIGTERM)
        wait_for(lambda: not running(server), "the server to stop")
        wait_for(lambda: not running(worker), "the server to stop its worker")


def test_a_worker_whose_server_was_killed_stops(tmp_path):
    """kill -9 of the server alone (not its process group): the worker it started
    stops by itself, rather than running on beside the next server's worker
    under the same worker id."""
    with serving(tmp_path, "worker_orphan", workers=1) as app:
        (server,) = children(app.process.pid)  # make's child: tictactoe_site.serve
        worker = task_worker_pid(app)
        os.kill(server, signal.SIGKILL)
        wait_for(lambda: not running(worker), "the orphaned worker to stop")
