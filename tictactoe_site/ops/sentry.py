"""Error reports: with SENTRY_DSN set (or SENTRY_DSN_FILE, tictactoe_site.lib.env),
every unhandled error goes to Sentry (sentry-sdk and its Django integration):
a page's 500, a live stream's failure (tictactoe_site.ops.middleware), a task that
fails in the worker, and any ERROR log line (an email given up, a live listener
that cannot listen). Without SENTRY_DSN, `start` does nothing and sentry_sdk is
never imported.

A report names the request (the `request_id` and `route` tags, the id the
response's X-Request-ID header and the JSON log lines carry) and the user's id,
and nothing else about the person: no cookies, headers, address, request body,
URL or local variables, and no breadcrumbs (the log lines before an error, which
are not written to be sent anywhere). An invitation's secret, should any text of
a report hold one, is written `…` (tictactoe_site.ops.logs.without_secrets).

Not reported: the 503 a database outage answers (an outage, not a bug: it shows
on /readyz and in the log), every refusal (4xx), and requests for hosts the site
does not serve.

Cost: no tracing, no spans per middleware, signal or cache call, no session
counts (release health), so an ordinary request sends nothing; measured
in-process, a page costs about 55 µs more CPU with SENTRY_DSN set (a 404 page:
206 µs without, 262 µs with; 441 µs with the integration's defaults).
"""

import logging
import sys

from django.conf import settings
from django.tasks import TaskResultStatus
from django.tasks.signals import task_finished

from tictactoe_site.lib import database_outages
from tictactoe_site.ops import logs

# sentry_sdk once `start` has set it up.
_sdk = None


def start() -> None:
    """Set Sentry up in this process (the server's, the worker's) if SENTRY_DSN
    is set; before Django serves a request."""
    global _sdk
    if not settings.SENTRY_DSN or _sdk is not None:
        return
    import sentry_sdk
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.integrations.logging import LoggingIntegration, ignore_logger

    sentry_sdk.init(
        dsn=settings.SENTRY_DSN,
        integrations=[
            DjangoIntegration(
                middleware_spans=False, signals_spans=False, cache_spans=False
            ),
            # ERROR lines become reports; no line becomes a breadcrumb.
            LoggingIntegration(level=None, event_level=logging.ERROR),
        ],
        max_breadcrumbs=0,
        send_default_pii=False,
        include_local_variables=False,
        max_request_body_size="never",
        auto_session_tracking=False,
        before_send=before_send,
    )
    task_finished.connect(report_failed_task)
    # Its one line per failed task would report that task twice.
    ignore_logger("tictactoe_site.jobs.heartbeat")
    # A request for a host the site does not serve (bots, scanners): a 400,
    # logged as an error by Django, not a bug of the site.
    ignore_logger("django.security.DisallowedHost")
    _sdk = sentry_sdk


def before_send(event: dict, hint: dict) -> dict | None:
    exc_info = hint.get("exc_info")
    if exc_info and database_outages.is_outage(exc_info[1]):
        return None  # the database is away: lib.error_pages answers 503
    fields = logs.fields()
    tags = event.setdefault("tags", {})
    for name in ("request_id", "route"):
        if fields[name] is not None:
            tags[name] = fields[name]
    if fields["user_id"] is not None:
        event["user"] = {"id": str(fields["user_id"])}
    if "request" in event:
        event["request"] = {"method": event["request"].get("method")}
    return _without_secrets(event)


def _without_secrets(value):
    """`value` (an event, or a part of one) with no invitation's secret: a log
    line's record may carry the request, whose text names its path."""
    if isinstance(value, str):
        return logs.without_secrets(value)
    if isinstance(value, dict):
        return {key: _without_secrets(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_secrets(item) for item in value]
    return value


def report_exception() -> None:
    """The exception being handled, to Sentry when it is set up."""
    if _sdk is not None:
        _sdk.capture_exception()


def report_failed_task(sender, task_result, **kwargs) -> None:
    """A task that raised, while the worker handles its exception (Django sends
    task_finished from there)."""
    if task_result.status != TaskResultStatus.FAILED or sys.exc_info()[1] is None:
        return
    with _sdk.new_scope() as scope:
        scope.set_tag("task", task_result.task.module_path)
        scope.set_tag("task_id", str(task_result.id))
        _sdk.capture_exception()
