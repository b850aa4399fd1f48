"""Health probes, answered by the first middleware (tictactoe_site.ops.middleware)
before anything else looks at the request.

- /livez: the process serves. No database, no session. Under `make serve` it is
  answered on the event loop itself (tictactoe_site.server.asgi), so a probe
  never queues behind busy page threads; here for any other server (wsgi.py).
- /readyz: this process can serve pages now: its database answers (one small
  query) and takes writes (not a standby met during a failover), and every
  check registered with `readiness_check` passes (the live listener's,
  registered by games). A load balancer takes the host out of
  service while it answers 503.
- /healthz: the same answer as /readyz, for load balancers configured before.
- /workerz: the task worker beats (settings.TASK_WORKER_CHECK). For monitoring,
  never for a load balancer: no page needs the mail queue, and every host would
  answer the same 503 at once.

A probe is answered before anything asks for the Host header (a load balancer
probes by IP, which ALLOWED_HOSTS does not name), before the HTTPS redirect
(probes speak plain HTTP), and without a session or a cookie. A probe costs at
most one small query.
"""

import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpResponse, HttpResponseNotAllowed
from django.utils.cache import add_never_cache_headers
from django.utils.module_loading import import_string

from tictactoe_site.lib import database_outages

logger = logging.getLogger(__name__)

OK = b"ok\n"
METHODS = ("GET", "HEAD")

# A check answers None when all is well, else why not (the 503's body).
Check = Callable[[], str | None]
_readiness_checks: list[Check] = []


def readiness_check(check: Check) -> Check:
    """Have /readyz also ask `check` (once per check, in registration order)."""
    if check not in _readiness_checks:
        _readiness_checks.append(check)
    return check


def _answer(body: bytes | str, status: int = 200) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="text/plain")


# One small query: PostgreSQL says whether it takes writes (a standby does not).
PROBE = {"postgresql": "SHOW transaction_read_only"}


def _database_problem() -> str | None:
    """Why the database cannot serve pages now, or None."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(PROBE.get(connection.vendor, "SELECT 1"))
            (answer,) = cursor.fetchone()
    except DatabaseError as exc:
        logger.warning("readiness: the database does not answer: %s", exc)
        return "database unavailable"
    if answer == "on":  # connected to a standby: find the primary next time
        database_outages.discard()
        logger.warning("readiness: the database is read-only (a standby)")
        return "database read-only"
    return None


def live() -> HttpResponse:
    return _answer(OK)


def ready() -> HttpResponse:
    if (problem := _database_problem()) is not None:
        return _answer(f"{problem}\n", 503)
    for check in _readiness_checks:
        if (problem := check()) is not None:
            logger.warning("readiness: %s", problem)
            return _answer(f"{problem}\n", 503)
    return _answer(OK)


@functools.cache
def _worker_silence() -> Check:
    return import_string(settings.TASK_WORKER_CHECK)


def worker() -> HttpResponse:
    try:
        silence = _worker_silence()()
    except DatabaseError as exc:
        logger.warning("worker check: the database does not answer: %s", exc)
        return _answer("database unavailable\n", 503)
    if silence is not None:
        return _answer(
            f"task worker unavailable: {silence} (email waits in the queue)\n", 503
        )
    return _answer(OK)


PROBES = {"/livez": live, "/readyz": ready, "/healthz": ready, "/workerz": worker}
PATHS = frozenset(PROBES)


def answer(request, probe: Callable[[], HttpResponse]) -> HttpResponse:
    allowed = request.method in METHODS
    response = probe() if allowed else HttpResponseNotAllowed(METHODS)
    add_never_cache_headers(response)
    return response


class NotAProbe(logging.Filter):
    """Drops django.request's ERROR line for a probe's 503: a load balancer
    probes every few seconds, and the probe's own warning already says why."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return getattr(request, "path_info", None) not in PATHS
