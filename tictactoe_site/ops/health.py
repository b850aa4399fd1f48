"""Health probes, answered before anything else looks at the request.

- /livez: the process serves. No database, no session. Under `make serve` it is
  answered on the event loop itself (tictactoe_site.server.asgi), so a probe never
  queues behind busy page threads; here for any other server (wsgi.py).
- /readyz: this process can serve pages now: its database answers (one small
  query) and its live listener is connected (games.live), when this process runs
  one and it listens to the database (not to Redis: below). A load balancer
  takes the host out of service while it answers 503.
- /healthz: the same answer as /readyz, for load balancers configured before.
- /workerz: the task worker beats (tictactoe_site.jobs.heartbeat). For monitoring,
  never for a load balancer: no page needs the mail queue, and every host would
  answer the same 503 at once.

`answer_probes` is the first middleware: a probe is answered before anything
asks for the Host header (a load balancer probes by IP, which ALLOWED_HOSTS
does not name), before the HTTPS redirect (probes speak plain HTTP), and
without a session or a cookie. A probe costs at most one small query.
"""

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpResponse, HttpResponseNotAllowed
from django.utils.cache import add_never_cache_headers

logger = logging.getLogger(__name__)

OK = b"ok\n"
METHODS = ("GET", "HEAD")
PATHS = frozenset({"/livez", "/readyz", "/healthz", "/workerz"})


def _answer(body: bytes | str, status: int = 200) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="text/plain")


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("readiness: the database does not answer: %s", exc)
        return False
    return True


def live() -> HttpResponse:
    return _answer(OK)


def ready() -> HttpResponse:
    from games.live.hub import hub

    if not _database_answers():
        return _answer("database unavailable\n", 503)
    # The hub runs where the server started it (ASGI lifespan); not in the
    # test client or under a WSGI server, where only the database counts. A
    # listener on Redis does not count either: Redis is shared, so its outage
    # would take every host out at once while every page still works (the
    # streams catch up when it is back, games.live).
    listens_to_the_database = not settings.REDIS_URL
    if listens_to_the_database and hub.loop is not None and not hub.listening.is_set():
        logger.warning("readiness: live updates not connected")
        return _answer("live updates not connected\n", 503)
    return _answer(OK)


def worker() -> HttpResponse:
    from tictactoe_site.jobs.heartbeat import worker_silence

    try:
        silence = worker_silence()
    except DatabaseError as exc:
        logger.warning("worker check: the database does not answer: %s", exc)
        return _answer("database unavailable\n", 503)
    if silence is not None:
        return _answer(
            f"task worker unavailable: {silence} (email waits in the queue)\n", 503
        )
    return _answer(OK)


PROBES = {"/livez": live, "/readyz": ready, "/healthz": ready, "/workerz": worker}


def answer_probes(get_response):
    def middleware(request):
        probe = PROBES.get(request.path_info)
        if probe is None:
            return get_response(request)
        if request.method in METHODS:
            response = probe()
        else:
            response = HttpResponseNotAllowed(METHODS)
        add_never_cache_headers(response)
        return response

    return middleware


class NotAProbe(logging.Filter):
    """Drops django.request's ERROR line for a probe's 503: a load balancer
    probes every few seconds, and the probe's own warning already says why."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return getattr(request, "path_info", None) not in PATHS
