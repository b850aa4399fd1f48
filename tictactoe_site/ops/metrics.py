"""Metrics in the Prometheus text format, at /metrics, for the operator only.

prometheus_client, the format's reference library, in its multiprocess mode:
every process of the host (the server's, the task worker) counts into files
of its own and a scrape, answered by any of them, adds them up
(tictactoe_site.ops.metrics_dir says where; without that directory, in tests and
`manage.py` commands, a process counts in its own memory).
docs/operations.md lists every metric and what to alert on.

- Pages: the first middleware (tictactoe_site.ops.middleware) counts each
  request by route name (the URL pattern's name, never the path, so the labels
  stay few) and status, times it, and counts 429s apart.
- Streams, live events and resyncs: games.live.streams and games.live.hub count them.
- Moves: games.signals counts each as it commits. Mails: Django's
  `task_finished`, with the return value of tictactoe_site.jobs.mail.deliver.
- The task queue: read from its table at each scrape
  (tictactoe_site.ops.metrics_endpoint, which answers /metrics).
- The database pool: each server process samples psycopg_pool's statistics once
  a second on its event loop (`sample_pool`).
"""

import asyncio

from django.conf import settings
from django.db import connections
from django.tasks import TaskResultStatus
from django.tasks.signals import task_finished
from prometheus_client import Counter, Gauge, Histogram

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
    STREAM_ANSWERS: ("200", "400", "403", "404", "405", "429", "503"),
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


# Signals -----------------------------------------------------------------------


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
