"""/metrics: who may read it, and what a scrape answers.

/metrics answers a GET from the operator only (the first middleware,
tictactoe_site.ops.middleware, asks `is_operator`, before the Host header is
checked: Prometheus scrapes hosts by address): a request made straight from
this machine (a loopback address, and no proxy header: a proxy on this machine
relays other people's requests from a loopback address too), or one with
`Authorization: Bearer <METRICS_TOKEN>`. Anyone else gets what any unknown
address gets, a 404.

A scrape adds up every process's counts (prometheus_client's multiprocess mode,
in the directory tictactoe_site.ops.metrics_dir names) and reads the task queue
from its table (`TaskQueue`).
"""

import hmac
import ipaddress
import logging
import os
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Min, Q
from django.http import HttpResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from tictactoe_site.ops import metrics_dir

logger = logging.getLogger(__name__)

PATH = "/metrics"


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
