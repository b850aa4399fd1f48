"""What the task worker deletes on its own, at every heartbeat
(tictactoe_site.jobs.heartbeat): expired sessions and finished tasks older than
a day, then what the apps registered (tictactoe_site.jobs.periodic: expired
rate-limit counts, idle guests). Each table loses at most `BATCH` rows per run,
by an index, so a backlog (the first run on an old database) is worked off over
a few runs without one long transaction; on SQLite, a long one would hold up
every writer."""

from datetime import datetime, timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDbStore
from django.core.cache import caches

from tictactoe_site.jobs import periodic

BATCH = 5000
KEEP_RESULTS = timedelta(days=1)


def tidy(now: datetime) -> dict[str, int]:
    """One run: how many rows each kind lost."""
    return {
        "sessions": clear_expired_sessions(now),
        "tasks": prune_finished_tasks(now),
        **periodic.tidy(now),
    }


def clear_expired_sessions(now: datetime) -> int:
    """Django's `clear_expired` (sessions past their expiry date, by the index
    on it), a batch at a time; with the cached_db engine (SQLite: files in
    DJANGO_CACHE_DIR) their cached copies go first, so no file outlives its
    session."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    sessions = store.get_model_class().objects
    expired = list(
        sessions.filter(expire_date__lt=now).values_list("session_key", flat=True)[
            :BATCH
        ]
    )
    if issubclass(store, CachedDbStore):
        caches[settings.SESSION_CACHE_ALIAS].delete_many(
            [store.cache_key_prefix + key for key in expired]
        )
    deleted, _ = sessions.filter(session_key__in=expired, expire_date__lt=now).delete()
    return deleted


def prune_finished_tasks(now: datetime) -> int:
    """Finished tasks older than `KEEP_RESULTS` (mails sent, heartbeats)."""
    from django_tasks_db.models import DBTaskResult

    old = DBTaskResult.objects.filter(finished_at__lt=now - KEEP_RESULTS)
    deleted, _ = old.filter(pk__in=old.values("pk")[:BATCH]).delete()
    return deleted
