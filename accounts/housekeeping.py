"""accounts' share of the heartbeat's housekeeping (tictactoe_site.jobs.periodic;
registered by accounts.apps): expired rate-limit counts, and guest accounts
idle for `GAMES_GUEST_MAX_IDLE_DAYS`, at most `GUEST_BATCH` a run, each closed
in a transaction of its own."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from tictactoe_site.jobs import housekeeping, periodic

from . import rate_limits, services
from .models import Guest

# Closing settles the guest's games, several writes each: fewer a run.
GUEST_BATCH = 200


@periodic.housekeeping("rate limit counts")
def delete_expired_counts(now: datetime) -> int:
    return rate_limits.delete_expired(now=now, batch=housekeeping.BATCH)


@periodic.housekeeping("idle guests closed")
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
            services.close_account(user=guest.user)
            closed += 1
    return closed
