"""The task worker as production runs it (`python -m tictactoe_site.jobs.worker`,
started and kept alive by `make serve`), sending email to a real SMTP relay on
loopback (tests/support/smtp_sink.py), on the pass's database engine.

Delivery is at least once, and the tests count every message the relay received
(a Counter, never a set of subjects, which would hide a message sent twice). A
kill -9 that cuts an SMTP transaction after the relay took the message's data,
before the worker heard the relay accept it, sends that one message again: the
worker cannot know the relay kept it. That is the only duplicate allowed; a
worker killed between sends duplicates nothing, and no kill loses a message."""

import email
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from email import policy
from pathlib import Path

import pytest

from tictactoe_site.jobs import heartbeat
from tictactoe_site.jobs.heartbeat import requeue_abandoned

from ..support import served
from ..support.served import NO_DOT_ENV, PRODUCTION_ENV, ROOT, fresh_database, serving
from ..support.smtp_sink import SmtpSink

DEADLINE = 60  # seconds: generous for a loaded CI machine; the waits end on events
SUBJECTS = {f"Message {n}" for n in range(1, 6)}
SEND_FIVE = (
    "from django.core.mail import send_mail\n"
    "for n in range(1, 6):\n"
    "    send_mail(f'Message {n}', 'Body', 'noreply@example.com', ['a@example.com'])\n"
)
STATUSES = (
    "from django_tasks_db.models import DBTaskResult\n"
    "from tictactoe_site.jobs.mail import deliver\n"
    "rows = DBTaskResult.objects.filter(task_path=deliver.module_path)\n"
    "print(sorted(rows.values_list('status', flat=True)))\n"
)
# Each queued email's task: {subject: [status, worker ids]}.
DELIVERIES = (
    "import json\n"
    "from django_tasks_db.models import DBTaskResult\n"
    "from tictactoe_site.jobs.mail import deliver\n"
    "rows = DBTaskResult.objects.filter(task_path=deliver.module_path)\n"
    "print(json.dumps({row.args_kwargs['args'][0]['subject']:\n"
    "    [row.status, row.worker_ids] for row in rows}))\n"
)


def send(count: int) -> str:
    """A shell script queueing `count` emails, "Message 1" to "Message <count>"."""
    return SEND_FIVE.replace("range(1, 6)", f"range(1, {count + 1})")


def worker_env(database_url: str, sink: SmtpSink, tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        **PRODUCTION_ENV,
        **NO_DOT_ENV,
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


def start_worker(env: dict[str, str], log: Path | None = None) -> subprocess.Popen:
    """The worker, its stderr piped, or appended to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "tictactoe_site.jobs.worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if log is None else log.open("a"),
        text=True,
    )


def wait_for_messages(sink: SmtpSink, count: int) -> None:
    """Until the relay has received `count` messages (bounded)."""
    with sink.received:
        sink.received.wait_for(lambda: len(sink.messages) >= count, DEADLINE)


def deliveries(env: dict[str, str]) -> dict[str, list]:
    return json.loads(manage(env, "shell", "-v", "0", "-c", DELIVERIES))


@pytest.mark.processes
def test_kill_9_of_the_worker_mid_queue_loses_no_email(tmp_path):
    gate = threading.Event()
    with (
        SmtpSink(gate=gate) as sink,
        fresh_database(tmp_path, "worker_kill", migrated=True) as database_url,
    ):
        env = worker_env(database_url, sink, tmp_path)
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
        (cut,) = [
            subject
            for subject, (status, _) in deliveries(env).items()
            if status == "RUNNING"
        ]

        gate.set()
        worker = start_worker(env)
        try:
            wait_for_messages(sink, len(SUBJECTS) + 1)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, errors = worker.communicate(timeout=DEADLINE)

        # The relay had the message whose transaction the kill cut, but the
        # worker never heard it accepted: that one goes again, only that one.
        assert Counter(sink.subjects()) == Counter(SUBJECTS) + Counter([cut])
        assert manage(env, "shell", "-v", "0", "-c", STATUSES).strip() == str(
            ["SUCCESSFUL"] * 5
        )
        assert "Requeued 1 task(s) an earlier worker left running." in errors


def smtp_relay(**options) -> dict:
    return {
        "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
        "relay": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": options,
        },
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "warned"),
    [
        ({"host": "smtp.example.com", "port": 25, "use_tls": False}, True),
        ({"host": "smtp.example.com", "port": 587, "use_tls": True}, False),
    ],
)
def test_a_starting_worker_logs_the_clear_text_warning(
    settings, caplog, monkeypatch, options, warned
):
    """Where the warning is logged: the worker's start (heartbeat.prepare_worker),
    its own logger, level WARNING, before the worker's first line."""
    settings.MAILERS = smtp_relay(**options)
    monkeypatch.setenv("TASK_WORKER_ID", "worker-under-test")
    monkeypatch.setattr(heartbeat, "start_beating", lambda: None)
    try:
        assert heartbeat.prepare_worker() == "worker-under-test"
    finally:
        heartbeat.task_finished.disconnect(heartbeat.log_failure)
    lines = [
        (record.name, record.levelname, record.getMessage())
        for record in caplog.records
    ]
    starting = (
        "tictactoe_site.jobs.heartbeat",
        "INFO",
        "Task worker worker-under-test starting.",
    )
    clear_text = (
        "tictactoe_site.jobs.heartbeat",
        "WARNING",
        "Email goes to smtp.example.com without TLS: password-reset links cross the "
        "network in clear text. Set DJANGO_EMAIL_USE_TLS=1 (docs/settings.md).",
    )
    assert lines == ([clear_text] if warned else []) + [starting]


@pytest.mark.django_db
def test_only_what_this_worker_or_a_long_dead_one_left_running_is_requeued():
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from tictactoe_site.jobs.mail import deliver

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
    (worker,) = [
        pid
        for pid in children(app.server_pid())
        if b"tictactoe_site.jobs.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    return worker


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling another process's state, not a race


@pytest.mark.processes
def test_make_serve_starts_the_worker_again_when_it_dies(tmp_path):
    with SmtpSink() as sink:
        with serving(
            tmp_path,
            "worker_restart",
            workers=1,
            make_serve=True,
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
            sink.wait_for_subjects(SUBJECTS, DEADLINE)
            wait_for(
                lambda: (
                    app.manage("shell", "-v", "0", "-c", STATUSES).stdout.strip()
                    == str(["SUCCESSFUL"] * 5)
                ),
                "every email's task to end",
            )
            # Killed between sends: no transaction was cut, nothing goes twice.
            assert Counter(sink.subjects()) == Counter(SUBJECTS)
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


@pytest.mark.processes
def test_sigterm_to_a_single_process_server_stops_its_worker(tmp_path):
    """`make run`'s server (one process) told to stop by SIGTERM to its own
    process only, as `kill` or a container runtime does: the worker it started
    stops too, not left behind on its own."""
    with serving(tmp_path, "worker_sigterm", workers=1) as app:
        server = app.server_pid()
        worker = task_worker_pid(app)
        os.kill(server, signal.SIGTERM)
        wait_for(lambda: not running(server), "the server to stop")
        wait_for(lambda: not running(worker), "the server to stop its worker")


@pytest.mark.processes
def test_a_worker_whose_server_was_killed_stops(tmp_path):
    """kill -9 of the server alone (not its process group): the worker it started
    stops by itself, rather than running on beside the next server's worker
    under the same worker id."""
    with serving(tmp_path, "worker_orphan", workers=1) as app:
        server = app.server_pid()
        worker = task_worker_pid(app)
        os.kill(server, signal.SIGKILL)
        wait_for(lambda: not running(worker), "the orphaned worker to stop")


STARTING = re.compile(
    r"INFO tictactoe_site\.jobs\.heartbeat Task worker (\S+) starting\."
)


def logged_ids(log: Path) -> list[str]:
    """The id each worker logging to `log` announced as it started, in order."""
    return STARTING.findall(log.read_text()) if log.exists() else []


def started_as(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    """A worker logging to `log`, once it has announced its id; and that id."""
    before = len(logged_ids(log))
    worker = start_worker(env, log)
    wait_for(lambda: len(logged_ids(log)) > before, "the worker to start")
    return worker, logged_ids(log)[before]


def default_id(cache_dir: Path, slot: int) -> str:
    """The id docs/settings.md promises a worker without TASK_WORKER_ID."""
    place = hashlib.sha256(str(cache_dir.resolve()).encode()).hexdigest()[:8]
    return f"{socket.gethostname()}-{place}-{slot}"


@pytest.mark.processes
def test_two_workers_on_one_host_have_ids_of_their_own(tmp_path):
    """Two workers of one host (one DJANGO_CACHE_DIR), each in the middle of a
    send to a relay that never answers. One is killed with kill -9 and started
    again: it takes the dead one's id, and takes back only its own email, not
    the one its sibling is still sending."""
    with (
        SmtpSink(silent=True) as sink,
        fresh_database(tmp_path, "worker_ids", migrated=True) as database_url,
    ):
        env = worker_env(database_url, sink, tmp_path)
        del env["TASK_WORKER_ID"]
        env["DJANGO_EMAIL_TIMEOUT"] = "600"  # the sends hang until the test ends
        log = tmp_path / "workers.log"
        manage(env, "shell", "-c", send(2))

        first, first_id = started_as(env, log)
        second, second_id = started_as(env, log)
        workers = [first, second]
        try:
            cache = tmp_path / "cache"
            assert [first_id, second_id] == [default_id(cache, 0), default_id(cache, 1)]
            wait_for(
                lambda: (
                    sorted(deliveries(env).values())
                    == sorted([["RUNNING", [first_id]], ["RUNNING", [second_id]]])
                ),
                "each worker to be sending one email",
            )
            (mine,) = [
                subject
                for subject, (_, ids) in deliveries(env).items()
                if ids == [first_id]
            ]
            (sibling,) = {"Message 1", "Message 2"} - {mine}

            first.kill()
            first.wait(DEADLINE)
            again, again_id = started_as(env, log)
            workers.append(again)
            assert again_id == first_id
            wait_for(
                lambda: deliveries(env)[mine] == ["RUNNING", [first_id, first_id]],
                "the restarted worker to send its own email again",
            )
            assert deliveries(env)[sibling] == ["RUNNING", [second_id]]
            assert "Requeued 1 task(s) an earlier worker left running." in (
                log.read_text()
            )
        finally:
            for worker in workers:
                worker.kill()
                worker.wait(DEADLINE)


class HoldingSink(SmtpSink):
    """A relay that takes every message, but holds its answer to the first one
    titled `held` until `release` is set (`holding` is set meanwhile): its
    sender is then in the middle of that one SMTP transaction."""

    def __init__(self, held: str):
        super().__init__()
        self.held = held
        self.holding = threading.Event()
        self.release = threading.Event()

    def _take_data(self, stream) -> None:
        lines = []
        while (line := stream.readline()) not in (b".\r\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        message = email.message_from_bytes(b"".join(lines), policy=policy.default)
        if message["Subject"] == self.held and not self.holding.is_set():
            self.holding.set()
            self.release.wait()
        with self.received:
            self.messages.append(message)
            self.received.notify_all()


@pytest.mark.processes
def test_every_email_goes_once_over_three_hosts_and_a_kill_9_loses_none(tmp_path):
    """30 emails, a worker on each of three hosts (each its own DJANGO_CACHE_DIR,
    as on three machines), one of them killed with kill -9 while the relay holds
    its answer to "Message 7", then started again. Counted at the relay: every
    email exactly once, except "Message 7": the relay had it when the kill cut
    the transaction, so the worker never heard it accepted and sends it again."""
    count, held = 30, "Message 7"
    with (
        HoldingSink(held) as sink,
        fresh_database(tmp_path, "worker_fleet", migrated=True) as database_url,
    ):
        shared = worker_env(database_url, sink, tmp_path)
        del shared["TASK_WORKER_ID"]
        hosts = {
            name: shared | {"DJANGO_CACHE_DIR": str(tmp_path / name / "cache")}
            for name in ("a", "b", "c")
        }
        log = tmp_path / "workers.log"
        manage(shared, "shell", "-c", send(count))

        workers = {name: started_as(env, log) for name, env in hosts.items()}
        running = [worker for worker, _ in workers.values()]
        try:
            assert len({worker_id for _, worker_id in workers.values()}) == 3
            assert sink.holding.wait(DEADLINE), f"no worker sent {held}"
            status, (sender,) = deliveries(shared)[held]
            assert status == "RUNNING"
            (host,) = [name for name, (_, id_) in workers.items() if id_ == sender]

            workers[host][0].kill()
            workers[host][0].wait(DEADLINE)
            sink.release.set()
            again, again_id = started_as(hosts[host], log)
            running.append(again)
            assert again_id == sender

            wait_for_messages(sink, count + 1)
            wait_for(
                lambda: (
                    {status for status, _ in deliveries(shared).values()}
                    == {"SUCCESSFUL"}
                ),
                "every email to be sent",
            )
        finally:
            for worker in running:
                worker.send_signal(signal.SIGTERM)
                worker.wait(DEADLINE)

        expected = Counter(f"Message {n}" for n in range(1, count + 1))
        assert Counter(sink.subjects()) == expected + Counter([held])
        assert log.read_text().count("Requeued") == 1


@pytest.mark.processes
def test_one_worker_id_for_several_workers_is_refused():
    result = subprocess.run(
        [sys.executable, "-m", "tictactoe_site.server.serve"],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            **NO_DOT_ENV,
            "TASK_WORKERS": "2",
            "TASK_WORKER_ID": "mail",
        },
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert (result.returncode, result.stderr) == (
        1,
        "TASK_WORKER_ID names one worker, but TASK_WORKERS=2: unset TASK_WORKER_ID "
        "(each worker then has an id of its own).\n",
    )
