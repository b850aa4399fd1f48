"""Email leaves through the background worker, never inside a request.

The default mailer (settings.MAILERS["default"]) is `QueuedEmailBackend`: sending
a message stores it as a task (`deliver`) in the database, in the caller's
transaction, and returns at once. The task worker (tictactoe_site.jobs.worker) hands it
to the relay mailer (settings.MAILERS["relay"]: SMTP, or the console in
development). A relay that fails or does not answer delays only the worker: the
message is tried again later, with a growing delay, and given up after
`ATTEMPTS` tries with one logged line. A line names the recipient by an id
(`user=17`, `address=5`, the references') or by a count, never by an address:
an ERROR line becomes an error report (tictactoe_site.ops.sentry).

A mail whose text holds a secret (a password-reset or confirmation link) is
never stored as text: finished tasks are kept a day, the task admin shows their
arguments, and backups hold them. Such a message is marked `built_by_worker`
with references (which mail, to whom, whose account or address); the queue
stores those, and the worker builds the message again, link and all, when it
sends it (accounts.account_mail).
"""

import logging
import smtplib
from datetime import timedelta

from django.core.mail import EmailMultiAlternatives, mailers
from django.core.mail.backends.base import BaseEmailBackend
from django.tasks import task
from django.utils import timezone
from django.utils.module_loading import import_string

from tictactoe_site.ops import logs

logger = logging.getLogger(__name__)

RELAY = "relay"
ATTEMPTS = 6
FIRST_RETRY = timedelta(seconds=30)  # then doubled after each failure: ~16 min

# Who builds a message queued as references, by the name its references carry:
# only these, whatever the task table says.
BUILDERS = {"account": "accounts.account_mail.build"}
# The attribute of a message that holds its references (built_by_worker).
REFERENCES = "queued_references"


def to_json(message) -> dict:
    """What the worker needs to rebuild `message`, as JSON."""
    if message.attachments:
        raise ValueError("Queued email carries no attachments.")
    return {
        "subject": str(message.subject),
        "body": str(message.body),
        "from_email": str(message.from_email),
        "to": [str(address) for address in message.to],
        "cc": [str(address) for address in message.cc],
        "bcc": [str(address) for address in message.bcc],
        "reply_to": [str(address) for address in message.reply_to],
        "headers": {name: str(value) for name, value in message.extra_headers.items()},
        "alternatives": [
            [str(content), mimetype]
            for content, mimetype in getattr(message, "alternatives", [])
        ],
    }


def from_json(fields: dict) -> EmailMultiAlternatives:
    message = EmailMultiAlternatives(
        subject=fields["subject"],
        body=fields["body"],
        from_email=fields["from_email"],
        to=fields["to"],
        cc=fields["cc"],
        bcc=fields["bcc"],
        reply_to=fields["reply_to"],
        headers=fields["headers"],
    )
    for content, mimetype in fields["alternatives"]:
        message.attach_alternative(content, mimetype)
    return message


def _known(references: dict) -> dict:
    """`references`, if BUILDERS names their builder."""
    if references.get("build") not in BUILDERS:
        raise ValueError(f"No builder for {references.get('build')!r}.")
    return references


def built_by_worker(message, references: dict):
    """Mark `message` to be queued as `references` ({"build": a key of
    BUILDERS, ...}) instead of its text: the worker builds it again from them.
    Other mailers (the console, tests' outbox) send it as it is."""
    setattr(message, REFERENCES, _known(references))
    return message


def send_references(references: dict) -> None:
    """Send the mail `references` stand for. The queue (the default mailer)
    takes them unbuilt, and the worker builds the mail: a request costs the
    same whatever its mail says (a reset for an address with an account or
    without one), so its time tells no one which it was. Other mailers get it
    built now; nothing is sent when its builder finds nothing to send."""
    if isinstance(mailers["default"], QueuedEmailBackend):
        deliver.enqueue(_queued(_known(references)))
        return
    message = from_queue(references)
    if message is not None:
        message.send()


def _queued(fields: dict) -> dict:
    """`fields` with the id of the request that queued them (the worker's lines
    about the mail name it)."""
    return {**fields, "request_id": logs.current_request_id()}


def to_queue(message) -> dict:
    """What the queue stores for `message`: its references, or its text, and
    the id of the request that queued it."""
    return _queued(getattr(message, REFERENCES, None) or to_json(message))


def from_queue(fields: dict) -> EmailMultiAlternatives | None:
    """The message a queued task stands for, built now when it was queued as
    references; None when what it was about is gone (the builder says)."""
    if "build" in fields:
        return import_string(BUILDERS[fields["build"]])(fields)
    return from_json(fields)


class QueuedEmailBackend(BaseEmailBackend):
    """Queue each message for the worker; report it as sent."""

    def send_messages(self, email_messages) -> int:
        queued = 0
        for message in email_messages:
            if message.recipients():
                deliver.enqueue(to_queue(message))
                queued += 1
        return queued


@task
def deliver(message: dict, attempt: int = 1) -> str:
    """Send one queued message through the relay; on failure queue the next try."""
    with logs.bound(logs.RequestContext(message.get("request_id"))):
        return _deliver(message, attempt)


def _recipient(message: dict) -> str:
    """Whom a queued message is for, as a log line may say it: the id its
    references give, else how many addresses it goes to."""
    for reference in ("user", "address"):
        if reference in message:
            return f"{reference}={message[reference]}"
    if "build" in message:  # references to one address, of no account
        return "recipients=1"
    count = sum(len(message.get(field, ())) for field in ("to", "cc", "bcc"))
    return f"recipients={count}"


def _failure(exc: Exception) -> str:
    """What went wrong, without what a relay's answer may quote (addresses)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return type(exc).__name__
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"{type(exc).__name__} {exc.smtp_code}"
    return f"{type(exc).__name__}: {exc}"


def _deliver(message: dict, attempt: int) -> str:
    email = from_queue(message)
    if email is None:
        logger.info(
            "Email %s to %s not sent: its account or address changed",
            message.get("template"),
            _recipient(message),
        )
        return "not sent: its account or address changed"
    try:
        with mailers[RELAY] as relay:
            relay.send_messages([email])
    except (SystemExit, KeyboardInterrupt):
        # The worker is told to stop at once (a second SIGTERM, Ctrl-C) in the
        # middle of this send: queue the same attempt again before it goes, or
        # the message would end as a failed task and never be sent.
        deliver.enqueue(message, attempt)
        raise
    except (smtplib.SMTPException, OSError) as exc:
        if attempt >= ATTEMPTS:
            logger.error(
                "Email %r to %s not sent after %d attempts: %s",
                email.subject,
                _recipient(message),
                attempt,
                _failure(exc),
            )
            return "given up"
        delay = FIRST_RETRY * 2 ** (attempt - 1)
        deliver.using(run_after=timezone.now() + delay).enqueue(message, attempt + 1)
        return f"attempt {attempt} failed, retrying in {delay.total_seconds():.0f} s"
    return "sent"
