"""tictactoe_site.jobs.mail: email is queued for the task worker, sent by it through
the relay, tried again with a growing delay, given up with one logged line."""

import smtplib
from datetime import timedelta

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives, send_mail
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tictactoe_site.jobs.mail import deliver


class RefusingRelay(LocmemBackend):
    """A relay that drops the connection at every message."""

    def send_messages(self, messages):
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")


QUEUED = {
    "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
    "relay": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
}
REFUSING = QUEUED | {
    "relay": {"BACKEND": "tests.tictactoe_site.test_mail_queue.RefusingRelay"}
}
NOW = timezone.now().replace(microsecond=0)


def queued_message(**fields) -> dict:
    """A message as the queue stores it (tictactoe_site.jobs.mail.to_json)."""
    return {
        "subject": "S",
        "body": "B",
        "from_email": "f@example.com",
        "to": ["t@example.com"],
        "cc": [],
        "bcc": [],
        "reply_to": [],
        "headers": {},
        "alternatives": [],
        **fields,
    }


@pytest.fixture
def queued_mail(settings, db):
    settings.MAILERS = QUEUED


def deliveries() -> list[tuple[str, int]]:
    return sorted(
        (
            row.status,
            row.args_kwargs["args"][1] if len(row.args_kwargs["args"]) > 1 else 1,
        )
        for row in DBTaskResult.objects.filter(task_path=deliver.module_path)
    )


@pytest.mark.usefixtures("queued_mail")
def test_sending_only_queues_the_message_until_the_worker_runs(run_tasks):
    assert send_mail("Hello", "Body", "from@example.com", ["to@example.com"]) == 1
    assert mail.outbox == []
    assert deliveries() == [("READY", 1)]

    run_tasks()

    assert [(m.subject, m.body, m.from_email, m.to) for m in mail.outbox] == [
        ("Hello", "Body", "from@example.com", ["to@example.com"])
    ]
    assert deliveries() == [("SUCCESSFUL", 1)]


@pytest.mark.usefixtures("queued_mail")
def test_the_worker_sends_the_message_as_it_was_written(run_tasks):
    message = EmailMultiAlternatives(
        subject="Your turn",
        body="Plain text",
        from_email="tictactoe <noreply@example.com>",
        to=["alice@example.com"],
        cc=["bob@example.com"],
        bcc=["audit@example.com"],
        reply_to=["help@example.com"],
        headers={"List-Unsubscribe": "<https://example.com/u/1>"},
    )
    message.attach_alternative("<p>HTML</p>", "text/html")
    message.send()
    run_tasks()

    (sent,) = mail.outbox
    assert (sent.subject, sent.body, sent.from_email) == (
        "Your turn",
        "Plain text",
        "tictactoe <noreply@example.com>",
    )
    assert (sent.to, sent.cc, sent.bcc, sent.reply_to) == (
        ["alice@example.com"],
        ["bob@example.com"],
        ["audit@example.com"],
        ["help@example.com"],
    )
    assert sent.extra_headers == {"List-Unsubscribe": "<https://example.com/u/1>"}
    assert sent.alternatives[0].content == "<p>HTML</p>"


@pytest.mark.usefixtures("queued_mail")
def test_a_message_without_recipients_is_not_queued():
    assert EmailMultiAlternatives("Nobody", "Body", "from@example.com").send() == 0
    assert deliveries() == []


@pytest.mark.django_db
def test_a_failed_send_is_queued_again_thirty_seconds_later(
    settings, monkeypatch, run_tasks, caplog
):
    settings.MAILERS = REFUSING
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    send_mail("Hello", "Body", "from@example.com", ["to@example.com"])

    run_tasks()

    assert mail.outbox == []
    assert deliveries() == [("READY", 2), ("SUCCESSFUL", 1)]
    retry = DBTaskResult.objects.get(status="READY")
    assert retry.run_after == NOW + timedelta(seconds=30)
    assert caplog.records == []  # a retry is not a failure to report yet


@pytest.mark.django_db
def test_the_delay_doubles_with_each_failure(settings, monkeypatch):
    settings.MAILERS = REFUSING
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    message = queued_message()

    assert deliver.call(message, 3) == "attempt 3 failed, retrying in 120 s"
    assert DBTaskResult.objects.get().run_after == NOW + timedelta(seconds=120)


@pytest.mark.django_db
def test_the_sixth_failure_gives_up_with_one_logged_line(settings, caplog):
    settings.MAILERS = REFUSING
    message = queued_message(subject="Reset your password", to=["alice@example.com"])

    assert deliver.call(message, 6) == "given up"

    assert DBTaskResult.objects.count() == 0
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "ERROR",
            "Email 'Reset your password' to recipients=1 not sent after 6 "
            "attempts: SMTPServerDisconnected: Connection unexpectedly closed",
        )
    ]


class RejectingRelay(LocmemBackend):
    """A relay that refuses the recipient, quoting the address."""

    def send_messages(self, messages):
        raise smtplib.SMTPRecipientsRefused(
            {"alice@example.com": (550, b"5.1.1 <alice@example.com>: unknown user")}
        )


@pytest.mark.django_db
def test_the_line_of_an_email_given_up_names_no_address(settings, caplog):
    """It becomes an error report (tictactoe_site.ops.sentry): how many, never
    an address, not even one the relay's answer quotes."""
    settings.MAILERS = QUEUED | {
        "relay": {"BACKEND": "tests.tictactoe_site.test_mail_queue.RejectingRelay"}
    }
    message = queued_message(subject="Reset", to=["alice@example.com"], cc=["b@x.org"])

    assert deliver.call(message, 6) == "given up"

    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "ERROR",
            "Email 'Reset' to recipients=2 not sent after 6 attempts: "
            "SMTPRecipientsRefused",
        )
    ]


class StoppedRelay(LocmemBackend):
    """The worker is told to stop at once while the relay talks (the signal
    handler of django-tasks-db's worker raises SystemExit)."""

    def send_messages(self, messages):
        raise SystemExit(1)


@pytest.mark.django_db
def test_a_worker_stopped_mid_send_queues_the_message_again(settings):
    settings.MAILERS = QUEUED | {
        "relay": {"BACKEND": "tests.tictactoe_site.test_mail_queue.StoppedRelay"}
    }
    message = queued_message()

    with pytest.raises(SystemExit):
        deliver.call(message, 2)

    assert deliveries() == [("READY", 2)]
