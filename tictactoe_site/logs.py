"""Log lines as an operator's tools read them: readable text (the default), or
one JSON object per line with DJANGO_LOG_FORMAT=json (docs/operations.md).

Every JSON line has `time` (UTC, ISO 8601), `level`, `logger`, `message`, and
`request_id`, `user_id` and `route` (the URL's name), null where unknown: the
line's request, as `bound` to the code that logs it. A request is bound by
tictactoe_site.request_ids for the pages and the live streams, and a queued
email by tictactoe_site.mail while the worker sends it, so one request can be
followed from its page to the worker.

The binding is a context variable: a page thread and the event loop each run
one request at a time in their own context, each stream and `asyncio.to_thread`
call gets a copy of its own, so a line never names another request. Loaded by
the logging configuration (settings.LOGGING, and the server's supervisor before
any Django setup): nothing here touches models or settings.
"""

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter

FORMATS = ("text", "json")
# The fields an access line (tictactoe_site.request_ids) adds to its JSON object.
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


def current_request_id() -> str | None:
    context = _bound.get()
    return None if context is None else context.request_id


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
            **fields(),
        )
        for name in ACCESS_FIELDS:
            if hasattr(record, name):
                log_data[name] = getattr(record, name)
        log_data.update(message_dict)


def uvicorn_config(log_format: str) -> dict | None:
    """The server's own lines (uvicorn's loggers, in every server process and
    in the supervisor, which never loads Django's logging) in the same format;
    None: uvicorn's default."""
    if log_format != "json":
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonLines}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json"}
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
