"""Work the heartbeat runs that the apps register (the jobs import no app): each
app's AppConfig.ready imports the module holding its decorated functions.

- `housekeeping(name)`: `fn(now) -> int` (rows or items done) runs at every
  heartbeat, in registration order, after the jobs' own tidying.
- `every(interval, name)`: a django.tasks task the heartbeat queues when none
  was queued within `interval` and none is still waiting or running.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.tasks import Task, TaskResultStatus

Tidier = Callable[[datetime], int]


@dataclass(frozen=True, slots=True)
class Periodic:
    name: str
    interval: timedelta
    task: Task


# Keyed by name: importing a module twice registers it once.
_tidiers: dict[str, Tidier] = {}
_tasks: dict[str, Periodic] = {}


def housekeeping(name: str) -> Callable[[Tidier], Tidier]:
    def register(fn: Tidier) -> Tidier:
        _tidiers[name] = fn
        return fn

    return register


def every(interval: timedelta, name: str) -> Callable[[Task], Task]:
    def register(task: Task) -> Task:
        _tasks[name] = Periodic(name, interval, task)
        return task

    return register


def tidy(now: datetime) -> dict[str, int]:
    """Every registered housekeeping: what each did."""
    return {name: fn(now) for name, fn in _tidiers.items()}


def queue_due(now: datetime, results) -> None:
    """Queue each registered task not queued within its interval, nor still
    waiting or running (a slow run is not joined by a pile of queued ones).
    `results`: the task results' manager."""
    for periodic in _tasks.values():
        recent = results.filter(
            Q(enqueued_at__gt=now - periodic.interval)
            | Q(status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING]),
            task_path=periodic.task.module_path,
        )
        if not recent.exists():
            periodic.task.enqueue()
