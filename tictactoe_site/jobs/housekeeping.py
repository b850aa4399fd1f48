"""What the task worker deletes on its own, at every heartbeat
(tictactoe_site.jobs.heartbeat): expired sessions, finished tasks older than a day,
expired rate-limit counts. Each table loses at most `BATCH` rows per run, by an
index, so a backlog (the first run on an old database) is worked off over a few
runs without one long transaction; on SQLite, a long one would hold up every
writer.

It also closes guest accounts idle for `GAMES_GUEST_MAX_IDLE_DAYS`, at most
`GUEST_BATCH` a run, each in a transaction of its own."""

from datetime import datetime, timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDbStore
from django.core.cache import caches
from django.db import transaction

from accounts import rate_limits
from accounts import services as accounts_services
from accounts.models import Guest

BATCH = 5000
# Closing settles the guest's games, several writes each: fewer a run.
GUEST_BATCH = 200
KEEP_RESULTS = timedelta(days=1)


def tidy(now: datetime) -> dict[str, int]:
    """One run: how many rows each kind lost."""
    return {
        "sessions": clear_expired_sessions(now),
        "tasks": prune_finished_tasks(now),
        "rate limit counts": rate_limits.delete_expired(now=now, batch=BATCH),
        "idle guests closed": close_idle_guests(now),
    }


def close_idle_guests(now: datetime) -> int:
    """Close, as closing an account does (accounts.services.close_account: its
    unfinished games settled, its finished games and records kept, its name
    kept and not free again), each guest account without activity since
    `GAMES_GUEST_MAX_IDLE_DAYS` before `now`, oldest first, by the index on
    Guest.last_active_at. The Guest row stays: the name reads "bob (closed
    guest)". A guest active again meanwhile is left alone."""
    idle_since = now - timedelta(days=settings.GAMES_GUEST_MAX_IDLE_DAYS)
    idle = Guest.objects.filter(last_active_at__lt=idle_since, user__is_active=True)
    closed = 0
    for user_id in idle.order_by("last_active_at").values_list("pk", flat=True)[
        :GUEST_BATCH
    ]:
        with transaction.atomic():
            guest = idle.select_for_update(of=("self",)).filter(pk=user_id).first()
            if guest is None:
                continue  # kept, closed or active since the list was read
            accounts_services.close_account(user=guest.user)
            closed += 1
    return closed


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
