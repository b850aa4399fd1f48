"""Where the limits count: `RateLimitCount`, a table that nothing evicts.

allauth's limits (logins, resets, the account pages) count through Django's
cache API in the "default" cache; `RateLimitStore` is that cache, a backend over
the table. It differs from Django's DatabaseCache where a limit needs it to: no
write counts the table (DatabaseCache runs COUNT(*) on every write), and no
write drops a live row (past MAX_ENTRIES DatabaseCache deletes a third of all
keys, live counts included, so whoever fills the table resets everyone's
counts). A read ignores an expired row; the task worker's housekeeping deletes
them (`delete_expired`, by the index on `expires_at`). Values are JSON
(allauth's lists of hit times), not pickles: a row holds data, never code. A
client address's count of failed logins is never deleted, only takes back a
correct second factor's own attempt (`RateLimitStore.delete`).

The site's own limits (games.views: creating and aborting games) count with
`hit()`, which also says how long to wait.
"""

import re
from datetime import UTC, datetime, timedelta

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.db import connection, transaction
from django.utils import timezone

from .models import RateLimitCount

# A value stored without a timeout (allauth always gives one).
NEVER = datetime(9999, 1, 1, tzinfo=UTC)
# allauth's count of one client address's failed logins, newest time first
# ("allauth:rl:allauth.account:login_failed:5/900.0/ip:ip:192.0.2.1"), not its
# lock (the same and ":lock").
ADDRESS_FAILURES = re.compile(
    r"allauth:rl:allauth\.account:login_failed:[^:]+/ip:ip:[0-9a-f.:]+"
)


class RateLimitStore(BaseCache):
    """Django's cache API over `RateLimitCount`: one statement per operation."""

    def __init__(self, location, params):
        super().__init__(params)

    def _expires_at(self, timeout) -> datetime:
        if timeout is DEFAULT_TIMEOUT:
            timeout = self.default_timeout
        if timeout is None:
            return NEVER
        return timezone.now() + timedelta(seconds=timeout)

    def get(self, key, default=None, version=None):
        key = self.make_and_validate_key(key, version=version)
        live = RateLimitCount.objects.filter(key=key, expires_at__gt=timezone.now())
        values = list(live.values_list("value", flat=True)[:1])
        return values[0] if values else default

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> None:
        key = self.make_and_validate_key(key, version=version)
        count = RateLimitCount(
            key=key, value=value, expires_at=self._expires_at(timeout)
        )
        RateLimitCount.objects.bulk_create(
            [count],
            update_conflicts=True,
            unique_fields=["key"],
            update_fields=["value", "expires_at"],
        )

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        """Store `value` unless a live row holds `key`, and say whether it did:
        allauth's lock around each count. One statement (an upsert that replaces
        only an expired row), atomic on SQLite and PostgreSQL alike, which the
        ORM cannot write: its upsert replaces any row and says not which."""
        key = self.make_and_validate_key(key, version=version)
        meta = RateLimitCount._meta
        quote = connection.ops.quote_name
        table, value_column, expiry_column = (
            quote(meta.db_table),
            quote(meta.get_field("value").column),
            quote(meta.get_field("expires_at").column),
        )
        expiry = meta.get_field("expires_at")
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({quote(meta.pk.column)}, {value_column}, "
                f"{expiry_column}) VALUES (%s, %s, %s) "
                f"ON CONFLICT ({quote(meta.pk.column)}) DO UPDATE SET "
                f"{value_column} = excluded.{value_column}, "
                f"{expiry_column} = excluded.{expiry_column} "
                f"WHERE {table}.{expiry_column} <= %s",
                [
                    key,
                    meta.get_field("value").get_db_prep_save(value, connection),
                    expiry.get_db_prep_save(self._expires_at(timeout), connection),
                    expiry.get_db_prep_save(timezone.now(), connection),
                ],
            )
            return cursor.rowcount == 1

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        live = RateLimitCount.objects.filter(key=key, expires_at__gt=timezone.now())
        return live.update(expires_at=self._expires_at(timeout)) > 0

    def delete(self, key, version=None) -> bool:
        """Delete `key`, unless it is a client address's count of failed
        logins: that loses its newest time only. allauth deletes it with the
        account's count after a correct second factor (allauth.mfa's
        check_rate_limit), whose own attempt that time is; deleting it all let
        one address guess passwords without limit, logging in to accounts of
        its own between guesses. The count only expires."""
        stored = self.make_and_validate_key(key, version=version)
        if ADDRESS_FAILURES.fullmatch(key):
            return self._take_back_newest(stored)
        deleted, _ = RateLimitCount.objects.filter(key=stored).delete()
        return deleted > 0

    def _take_back_newest(self, key: str) -> bool:
        with transaction.atomic():
            live = RateLimitCount.objects.filter(key=key, expires_at__gt=timezone.now())
            count = live.select_for_update().first()
            if count is None or not count.value:
                return False
            count.value = count.value[1:]
            count.save(update_fields=["value"])
        return True

    def clear(self) -> None:
        RateLimitCount.objects.all().delete()


def delete_expired(*, now: datetime, batch: int) -> int:
    """Delete up to `batch` expired counts (by the index on `expires_at`); how
    many. The outer condition is checked again on each row as it is deleted, so
    a count written again meanwhile stays."""
    expired = RateLimitCount.objects.filter(expires_at__lte=now)
    oldest = expired.values("pk")[:batch]
    deleted, _ = expired.filter(pk__in=oldest).delete()
    return deleted


def hit(key: str, *, limit: int, window: timedelta) -> timedelta | None:
    """Count one action under `key`, unless `limit` were counted within the
    last `window`: then nothing is counted and the answer is the wait until the
    oldest of them leaves the window. Under the row's lock, so simultaneous
    actions cannot pass the limit together; the time is read once the lock is
    held, so an action that waited behind later ones is told no more than the
    window."""
    with transaction.atomic():
        RateLimitCount.objects.bulk_create(
            [RateLimitCount(key=key, value=[], expires_at=timezone.now())],
            ignore_conflicts=True,
        )
        count = RateLimitCount.objects.select_for_update().get(key=key)
        now = timezone.now()
        since = (now - window).timestamp()
        hits = [moment for moment in count.value or [] if moment > since]
        if len(hits) >= limit:
            return datetime.fromtimestamp(hits[0], UTC) + window - now
        count.value = [*hits, now.timestamp()]
        count.expires_at = now + window
        count.save(update_fields=["value", "expires_at"])
    return None
