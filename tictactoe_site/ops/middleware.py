"""The site's one middleware for operations, first in settings.MIDDLEWARE:

- the health probes (tictactoe_site.ops.health) and the operator's /metrics
  (tictactoe_site.ops.metrics_endpoint) are answered first, before the Host
  header is checked and before the HTTPS redirect, with no request id and no
  access line;
- every other request gets an id: its log lines carry it (tictactoe_site.ops.logs),
  its response says it (`X-Request-ID`), an error report names it
  (tictactoe_site.ops.sentry), and an email it queues carries it to the worker
  (tictactoe_site.jobs.mail);
- it is counted and timed by route name and status (tictactoe_site.ops.metrics)
  unless METRICS_ENABLED is off.

Later in settings.MIDDLEWARE, `refuse_before_views` answers, with the pages of
tictactoe_site.lib.error_pages, what no view should see: a NUL byte anywhere in
the request (400), and a method the view's mark (`allow_methods`) does not
allow (405). Here because every request runs this module anyway.

The id is the proxy's when one is trusted (DJANGO_TRUSTED_PROXY_COUNT) and
sends a valid one (nginx: `proxy_set_header X-Request-ID $request_id;`,
docs/deploying.md), so the proxy's log and the app's name a request alike;
otherwise a fresh one. Without a trusted proxy the header is a client's claim,
as X-Forwarded-For is.

With the access log on (DJANGO_LOG_FORMAT=json) each request also gets one line
at its end: method, route (the URL's name, never the path, which may hold an
invitation's secret), status and duration; a live stream's line comes when it
closes (`serve_stream`, the streams' counterpart of the middleware).
"""

import logging
import random
import re
import time

from django.conf import settings

from tictactoe_site.lib import error_pages
from tictactoe_site.ops import health, logs, metrics, metrics_endpoint, sentry

HEADER = "X-Request-ID"
# What an id from the proxy may be: nginx's $request_id is 32 hex digits.
VALID = re.compile(r"[A-Za-z0-9._-]{1,64}")

access = logging.getLogger("tictactoe_site.access")


def accepted(value: str | None) -> str:
    """The proxy's id when it is trusted and valid, else a fresh one: 32 hex
    digits, as nginx's. Not a secret, so not from the system's random source,
    which costs a system call (2 µs here; uuid4 9 µs): 128 random bits make a
    repeat vanishingly unlikely all the same."""
    if value and settings.TRUSTED_PROXY_COUNT and VALID.fullmatch(value):
        return value
    return f"{random.getrandbits(128):032x}"


def log_access(
    method: str, route: str | None, status: int | None, started: float
) -> None:
    """`status` None: the client left before any answer."""
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    access.info(
        "%s %s %s %.1f ms",
        method,
        route or "-",
        status,
        duration_ms,
        extra={"method": method, "status": status, "duration_ms": duration_ms},
    )


def operations(get_response):
    probes = health.PROBES
    measuring = settings.METRICS_ENABLED
    static = "/" + settings.STATIC_URL.lstrip("/")
    # (route, status) -> its counter and histogram: labels() takes a lock.
    children: dict[tuple[str, int], tuple] = {}

    def middleware(request):
        path = request.path_info
        probe = probes.get(path)
        if probe is not None:
            return health.answer(request, probe)
        if (
            measuring
            and path == metrics_endpoint.PATH
            and request.method == "GET"
            and metrics_endpoint.is_operator(request)
        ):
            return metrics_endpoint.scrape()
        started = time.perf_counter()
        request_id = accepted(request.META.get("HTTP_X_REQUEST_ID"))
        context = logs.RequestContext(request_id, request=request)
        # For the lines Django logs once this middleware is done (a 4xx's).
        request.log_context = context
        token = logs.bind(context)
        try:
            response = get_response(request)
            response[HEADER] = request_id
            if access.isEnabledFor(logging.INFO):
                route = context.fields()["route"]
                log_access(request.method, route, response.status_code, started)
        finally:
            logs.unbind(token)
        if measuring:
            elapsed = time.perf_counter() - started
            match = request.resolver_match
            if match is not None:
                route = match.view_name
            else:
                route = "static" if path.startswith(static) else "unmatched"
            status = response.status_code
            child = children.get((route, status))
            if child is None:
                child = children[route, status] = (
                    metrics.REQUESTS.labels(route, str(status)),
                    metrics.REQUEST_SECONDS.labels(route),
                )
            child[0].inc()
            child[1].observe(elapsed)
            if status == 429:
                metrics.RATE_LIMITED.labels(route).inc()
        return response

    return middleware


async def serve_stream(stream, scope, receive, send, route: str) -> None:
    """A live stream (games.live.streams) with its request id, as the middleware
    gives the pages; an error it does not handle goes to Sentry with it. `route`:
    the stream's URL name (games.live.streams.route knows it without resolving
    the path, a fifth of a stream's opening on the event loop)."""
    started = time.perf_counter()
    header = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
    context = logs.RequestContext(accepted(header), route=route)
    echoed = (HEADER.lower().encode(), context.request_id.encode())
    status = None

    async def send_with_id(message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            message = {**message, "headers": [*message["headers"], echoed]}
        await send(message)

    with logs.bound(context):
        try:
            await stream(scope, receive, send_with_id)
        except Exception:
            sentry.report_exception()
            raise
        finally:
            if access.isEnabledFor(logging.INFO):
                log_access(scope["method"], context.route, status, started)


NUL = "\x00"


def _has_nul(request) -> bool:
    if NUL in request.path_info:
        return True
    sources = [request.GET] + ([request.POST] if request.method == "POST" else [])
    return any(
        NUL in key or any(NUL in value for value in values if isinstance(value, str))
        for source in sources
        for key, values in source.lists()
    )


def refuse_before_views(get_response):
    def middleware(request):
        if _has_nul(request):
            return error_pages.nul_byte_refusal(request)
        return get_response(request)

    def process_view(request, view, args, kwargs):
        allowed = getattr(view, "allowed_methods", None)
        if allowed is not None and request.method not in allowed:
            return error_pages.method_not_allowed(request, allowed, view.method_hint)
        return None

    middleware.process_view = process_view
    return middleware
