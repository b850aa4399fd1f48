"""Metrics in the Prometheus text format, at /metrics, for the operator only.

prometheus_client, the format's reference library, in its multiprocess mode:
every process of the host (the server's, the task worker) counts into files
of its own and a scrape, answered by any of them, adds them up
(tictactoe_site.ops.metrics_dir says where; without that directory, in tests and
`manage.py` commands, a process counts in its own memory).
docs/operations.md lists every metric and what to alert on.

- Pages: `measure_requests`, the middleware right after the health probes,
  counts each request by route name (the URL pattern's name, never the path, so
  the labels stay few) and status, times it, and counts 429s apart. It answers
  /metrics itself, before the Host header is checked (Prometheus scrapes hosts
  by address) and before the HTTPS redirect.
- Streams, live events and resyncs: games.live.streams and games.live.hub count them.
- Moves, mails: Django's signals (`move_made`; `task_finished` with the return
  value of tictactoe_site.jobs.mail.deliver).
- The task queue: read from its table at each scrape (`TaskQueue`).
- The database pool: each server process samples psycopg_pool's statistics once
  a second on its event loop (`sample_pool`).

/metrics answers a GET from the operator only: a request made straight from
this machine (a loopback address, and no proxy header: a proxy on this machine
relays other people's requests from a loopback address too), or one with
`Authorization: Bearer <METRICS_TOKEN>`. Anyone else gets what any unknown
address gets, a 404.
"""

import asyncio
import hmac
import ipaddress
import logging
import os
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import Count, Min, Q
from django.http import HttpResponse
from django.tasks import TaskResultStatus
from django.tasks.signals import task_finished
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from games.signals import move_made
from tictactoe_site.ops import metrics_dir

logger = logging.getLogger(__name__)

PATH = "/metrics"

REQUESTS = Counter(
    "tictactoe_requests",
    "Pages answered, by route name and status.",
    ["route", "status"],
)
REQUEST_SECONDS = Histogram(
    "tictactoe_request_duration_seconds",
    "Time from the first middleware to the response, by route name.",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RATE_LIMITED = Counter(
    "tictactoe_rate_limited",
    "Requests refused with 429 (a limit), by route name.",
    ["route"],
)
STREAM_ANSWERS = Counter(
    "tictactoe_stream_answers",
    "Live-stream requests by the status they were answered with (200: opened; "
    "403, 429, 503, ...: refused).",
    ["status"],
)
STREAMS = Gauge(
    "tictactoe_streams_open",
    "Live-update streams open now, by kind (game, lobby).",
    ["kind"],
    multiprocess_mode="livesum",
)
LIVE_EVENTS = Counter(
    "tictactoe_live_events_sent",
    "Events (news, not pings) sent on live streams, by kind (game, lobby).",
    ["kind"],
)
LIVE_RESYNCS = Counter(
    "tictactoe_live_resyncs",
    "Times a live listener read every watched game from the database because it "
    "may have missed news: once as it starts, then once per lost connection.",
)
MOVES = Counter("tictactoe_moves", "Moves played.")
MAILS = Counter(
    "tictactoe_mails",
    "Email delivery attempts by the task worker, by outcome (sent, retried, "
    "given_up, failed).",
    ["outcome"],
)
POOL_CONNECTIONS = Gauge(
    "tictactoe_db_pool_connections",
    "Pooled database connections, by state (in_use, idle); PostgreSQL only.",
    ["state"],
    multiprocess_mode="livesum",
)
POOL_MAX = Gauge(
    "tictactoe_db_pool_max_connections",
    "The most connections the pools may open (DJANGO_DB_POOL_MAX per process).",
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "tictactoe_db_pool_waiting",
    "Requests waiting for a pooled connection now.",
    multiprocess_mode="livesum",
)
POOL_WAITS = Counter(
    "tictactoe_db_pool_waits", "Requests that had to wait for a pooled connection."
)
POOL_WAIT_SECONDS = Counter(
    "tictactoe_db_pool_wait_seconds", "Time requests spent waiting for a connection."
)
POOL_ERRORS = Counter(
    "tictactoe_db_pool_errors",
    "Requests that got no pooled connection (DJANGO_DB_POOL_TIMEOUT passed).",
)

# The label values known in advance, made at import so that every process
# exports them at 0 from its start: a labelled metric exports only the values
# made so far (in multiprocess mode, only those written to a process's file),
# and an idle host would show "no data" where it means 0.
LIVE_KINDS = ("game", "lobby")
KNOWN_LABELS = {
    RATE_LIMITED: (
        "new_game",
        "abort_game",
        "invitation_guest",
        "join_game_as_guest",
        "account_login",
        "account_reauthenticate",
        "account_close",
        "account_reset_password",
        "account_email",
        "game_events",
        "lobby_events",
    ),
    # Every status games.live.streams answers with.
    STREAM_ANSWERS: ("200", "400", "403", "404", "429", "503"),
    STREAMS: LIVE_KINDS,
    LIVE_EVENTS: LIVE_KINDS,
    MAILS: ("sent", "retried", "given_up", "failed"),
    POOL_CONNECTIONS: ("in_use", "idle"),
}


def _make_known_labels() -> None:
    for metric, known in KNOWN_LABELS.items():
        for value in known:
            metric.labels(value)


_make_known_labels()


# Pages -------------------------------------------------------------------------


def _direct_from_loopback(request) -> bool:
    """The request comes from this machine and through no proxy: a proxy adds
    one of these headers (docs/deploying.md's nginx block sets X-Forwarded-For), and one
    on this machine relays everybody's requests from a loopback address."""
    meta = request.META
    if any(
        header in meta
        for header in ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")
    ):
        return False
    try:
        address = ipaddress.ip_address(meta.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _has_token(request) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        return False
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def is_operator(request) -> bool:
    return _has_token(request) or _direct_from_loopback(request)


def measure_requests(get_response):
    static = "/" + settings.STATIC_URL.lstrip("/")
    # (route, status) -> its counter and histogram: labels() takes a lock.
    children: dict[tuple[str, int], tuple] = {}

    def middleware(request):
        if (
            request.path_info == PATH
            and request.method == "GET"
            and is_operator(request)
        ):
            return scrape()
        started = time.perf_counter()
        response = get_response(request)
        elapsed = time.perf_counter() - started
        match = request.resolver_match
        if match is not None:
            route = match.view_name
        else:
            route = "static" if request.path_info.startswith(static) else "unmatched"
        status = response.status_code
        child = children.get((route, status))
        if child is None:
            child = children[route, status] = (
                REQUESTS.labels(route, str(status)),
                REQUEST_SECONDS.labels(route),
            )
        child[0].inc()
        child[1].observe(elapsed)
        if status == 429:
            RATE_LIMITED.labels(route).inc()
        return response

    return middleware


# The scrape --------------------------------------------------------------------


class TaskQueue:
    """The task queue at scrape time: one query on the queue's own index
    (django-tasks-db's, on tasks ready to run)."""

    def collect(self):
        from django_tasks_db.models import DBTaskResult, get_date_max

        unscheduled = Q(run_after=get_date_max())
        try:
            due = DBTaskResult.objects.ready().aggregate(
                count=Count("pk"),
                enqueued=Min("enqueued_at", filter=unscheduled),
                scheduled=Min("run_after", filter=~unscheduled),
            )
        except DatabaseError as exc:
            logger.warning("metrics: the task queue cannot be read: %s", exc)
            return
        waiting_since = min(
            (when for when in (due["enqueued"], due["scheduled"]) if when),
            default=None,
        )
        age = timezone.now() - waiting_since if waiting_since else timedelta()
        yield GaugeMetricFamily(
            "tictactoe_task_queue_depth",
            "Tasks due to run now that no worker has taken yet.",
            value=due["count"],
        )
        yield GaugeMetricFamily(
            "tictactoe_task_queue_oldest_age_seconds",
            "How long the oldest of them has been due (0: none).",
            value=max(age.total_seconds(), 0.0),
        )


TASKS = CollectorRegistry()
TASKS.register(TaskQueue())


def _host_registry():
    """Every process's counts (multiprocess mode), else this process's."""
    path = os.environ.get(metrics_dir.VARIABLE)
    if not path:
        return REGISTRY
    # A process that died without saying so (kill -9) leaves its gauges behind:
    # they no longer count (its counters do).
    for _name, pid in metrics_dir.process_files(Path(path)):
        if not metrics_dir.is_running(pid):
            mark_process_dead(pid, path)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path)
    return registry


def scrape() -> HttpResponse:
    body = generate_latest(_host_registry()) + generate_latest(TASKS)
    response = HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
    add_never_cache_headers(response)
    return response


# Signals -----------------------------------------------------------------------


def count_move(sender, **kwargs) -> None:
    MOVES.inc()


DELIVER = "tictactoe_site.jobs.mail.deliver"


def count_mail(sender, task_result, **kwargs) -> None:
    """deliver's return value says what happened: "sent", "attempt N failed,
    retrying in ...", "given up"; a task that raised is "failed"."""
    if task_result.task.module_path != DELIVER:
        return
    if task_result.status == TaskResultStatus.FAILED:
        outcome = "failed"
    else:
        value = str(task_result.return_value)
        if value == "sent":
            outcome = "sent"
        elif value == "given up":
            outcome = "given_up"
        else:
            outcome = "retried"
    MAILS.labels(outcome).inc()


move_made.connect(count_move, dispatch_uid="metrics_moves")
task_finished.connect(count_mail, dispatch_uid="metrics_mails")


# The database pool -------------------------------------------------------------

SAMPLE_EVERY_SECONDS = 1.0


def sample_pool() -> None:
    """psycopg_pool's statistics of this process's pool into the metrics: the
    gauges as they are now, the counters by what was added since the last
    sample (pop_stats resets them)."""
    pool = connections["default"].pool
    if pool is None:
        return
    stats = pool.pop_stats()
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    POOL_CONNECTIONS.labels("in_use").set(size - idle)
    POOL_CONNECTIONS.labels("idle").set(idle)
    POOL_MAX.set(stats.get("pool_max", 0))
    POOL_WAITING.set(stats.get("requests_waiting", 0))
    POOL_WAITS.inc(stats.get("requests_queued", 0))
    POOL_WAIT_SECONDS.inc(stats.get("requests_wait_ms", 0) / 1000)
    POOL_ERRORS.inc(stats.get("requests_errors", 0))


async def _keep_sampling_pool() -> None:
    while True:
        sample_pool()
        await asyncio.sleep(SAMPLE_EVERY_SECONDS)


_sampler: asyncio.Task | None = None


def start_sampling() -> None:
    """In a server process, on its event loop (tictactoe_site.server.asgi's lifespan):
    with metrics on and PostgreSQL's pool, sample the pool from now on. Reading
    the statistics waits on nothing; the pool is Django's, made when first
    asked for (opened by the first query)."""
    global _sampler
    pooled = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    loop = asyncio.get_running_loop()
    if not (settings.METRICS_ENABLED and pooled):
        return
    if _sampler is None or _sampler.get_loop() is not loop:
        _sampler = loop.create_task(_keep_sampling_pool())
