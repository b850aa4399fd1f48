"""Log lines as an operator's tools read them: readable text (the default), or
one JSON object per line with DJANGO_LOG_FORMAT=json (docs/operations.md).

Every JSON line has `time` (UTC, ISO 8601), `level`, `logger`, `message`, and
`request_id`, `user_id` and `route` (the URL's name), null where unknown: the
line's request, as `bound` to the code that logs it. A request is bound by
tictactoe_site.ops.middleware for the pages and the live streams, and a queued
email by tictactoe_site.jobs.mail while the worker sends it, so one request can be
followed from its page to the worker. A line Django writes once the request's
middleware is done (a refusal's, in django.request) names the request its
record carries.

No line holds an invitation's secret, whichever logger writes it: `NoSecrets`,
on every handler, writes it `…` (/invitations/7/…/).

The binding is a context variable: a page thread and the event loop each run
one request at a time in their own context, each stream and `asyncio.to_thread`
call gets a copy of its own, so a line never names another request. Loaded by
the logging configuration (settings.LOGGING, and the server's supervisor before
any Django setup): nothing here touches models or settings.
"""

import contextvars
import copy
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter

FORMATS = ("text", "json")
# The fields an access line (tictactoe_site.ops.middleware) adds to its JSON object.
ACCESS_FIELDS = ("method", "status", "duration_ms")


class RequestContext:
    """What a log line says about the request it belongs to. For a page, the
    route and the user come from the request itself, once known: the URL is
    resolved inside the handler, and the user is read from the session only if
    the page read it (a line never costs a query)."""

    __slots__ = ("request", "request_id", "route", "user_id")

    def __init__(
        self,
        request_id: str | None,
        *,
        request=None,
        route: str | None = None,
        user_id: int | None = None,
    ) -> None:
        self.request_id = request_id
        self.request = request
        self.route = route
        self.user_id = user_id

    def fields(self) -> dict:
        route, user_id = self.route, self.user_id
        if self.request is not None:
            match = getattr(self.request, "resolver_match", None)
            if match is not None:
                route = match.view_name
            session = getattr(self.request, "session", None)
            if session is not None and session.accessed:
                # Not imported with this module: the server's supervisor loads
                # it without Django set up.
                from django.contrib.auth import SESSION_KEY

                user_id = _user_id(session.get(SESSION_KEY))
        return {"request_id": self.request_id, "user_id": user_id, "route": route}


def _user_id(value) -> int | None:
    """The session's user id (a string of digits for this project's keys)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


NOTHING_BOUND = {"request_id": None, "user_id": None, "route": None}
_bound: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "tictactoe_request", default=None
)


def bind(context: RequestContext) -> contextvars.Token:
    """Lines logged from now on belong to `context`'s request, until `unbind`
    with what this returned (a middleware's way: cheaper than `bound`)."""
    return _bound.set(context)


def unbind(token: contextvars.Token) -> None:
    _bound.reset(token)


@contextmanager
def bound(context: RequestContext) -> Iterator[RequestContext]:
    """Lines logged inside the block belong to `context`'s request."""
    token = _bound.set(context)
    try:
        yield context
    finally:
        _bound.reset(token)


def note_user(user_id: int | None) -> None:
    """The bound request's user, where its request object cannot tell it (a
    live stream reads the session itself)."""
    context = _bound.get()
    if context is not None:
        context.user_id = user_id


def fields() -> dict:
    """request_id, user_id and route of the request being served, or None each."""
    context = _bound.get()
    return NOTHING_BOUND if context is None else context.fields()


def record_fields(record: logging.LogRecord) -> dict:
    """fields() of the request `record` belongs to: the one its `request` was
    given by tictactoe_site.ops.middleware (django.request logs a refusal after
    every middleware has finished), else the one bound."""
    context = getattr(getattr(record, "request", None), "log_context", None)
    if context is None:
        context = _bound.get()
    return NOTHING_BOUND if context is None else context.fields()


def current_request_id() -> str | None:
    context = _bound.get()
    return None if context is None else context.request_id


# An invitation's address, its slashes plain or percent-encoded (a `next=`
# parameter): group 1 up to the game's id; the secret follows (`…` once hidden).
INVITATION_SECRET = re.compile(
    r"((?:/|%2F)invitations(?:/|%2F)\d+(?:/|%2F))(?:(?!%2F)[^/?#&\s\"'<>…])+",
    re.IGNORECASE,
)
_tracebacks = logging.Formatter()


def without_secrets(text: str) -> str:
    """`text` with every invitation's secret written `…`: /invitations/7/…/."""
    return INVITATION_SECRET.sub(r"\g<1>…", text)


class NoSecrets(logging.Filter):
    """On every handler (settings.LOGGING, uvicorn_config): a line never holds an
    invitation's secret, whichever logger writes it. Django's request log
    writes the path of every 4xx, its security log a refused form's, uvicorn's
    access log the path and query. The record is changed in place, so the
    handlers after this one and Sentry's logging integration, which reads a
    record once every handler has had it, get it without the secret too."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken call: the handler's formatter reports it
        if INVITATION_SECRET.search(message):
            _hide_in_message(record, message)
        if record.exc_info and not record.exc_text:
            # As a formatter would cache it, and JsonLines prefers it.
            text = _tracebacks.formatException(record.exc_info)
            record.exc_text = without_secrets(text)
        if record.stack_info:
            record.stack_info = without_secrets(record.stack_info)
        return True


def _hide_in_message(record: logging.LogRecord, message: str) -> None:
    """Keep the arguments' shape where the secret is in them (uvicorn's access
    formatter reads its five); otherwise the message becomes the bare text."""
    if isinstance(record.args, tuple):
        record.args = tuple(
            without_secrets(arg) if isinstance(arg, str) else arg for arg in record.args
        )
        try:
            if not INVITATION_SECRET.search(record.getMessage()):
                return
        except (TypeError, ValueError):
            pass
    record.msg, record.args = without_secrets(message), ()


class JsonLines(JsonFormatter):
    """One JSON object per line, with exactly these fields (and the exception's
    traceback as `exc_info`): never a record's other attributes, which may hold
    a request object, whose address may carry an invitation's secret."""

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict):
        log_data.update(
            time=datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            ),
            level=record.levelname,
            logger=record.name,
            message=record.message,
            **record_fields(record),
        )
        if record.exc_text:  # NoSecrets' traceback, without the secret
            message_dict = {**message_dict, "exc_info": record.exc_text}
        for name in ACCESS_FIELDS:
            if hasattr(record, name):
                log_data[name] = getattr(record, name)
        log_data.update(message_dict)


def uvicorn_config(log_format: str) -> dict:
    """The server's own lines (uvicorn's loggers, in every server process and
    in the supervisor, which never loads Django's logging) in the same format
    (text: uvicorn's own), each through NoSecrets."""
    no_secrets = {"no_secrets": {"()": NoSecrets}}
    if log_format != "json":
        # Not imported with this module, which every Django process loads.
        from uvicorn.config import LOGGING_CONFIG

        config = copy.deepcopy(LOGGING_CONFIG)
        config["filters"] = no_secrets
        for handler in config["handlers"].values():
            handler["filters"] = ["no_secrets"]
        return config
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonLines}},
        "filters": no_secrets,
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["no_secrets"],
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["console"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {
                "handlers": ["console"],
                "level": "INFO",
                "propagate": False,
            },
        },
    }
