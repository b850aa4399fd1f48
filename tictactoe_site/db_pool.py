"""The PostgreSQL pool's health check (settings: OPTIONS["pool"]["check"]).

psycopg_pool calls its `check` on every connection it hands out, and Django's
CONN_HEALTH_CHECKS makes that a round trip to the database on every request: on
a cached game page, about a tenth of the page's CPU (docs/performance.md). A
connection handed out again within CHECK_AFTER of its previous use was working a
moment ago, so it goes out unchecked; one that has waited longer is checked as
before. After a database restart every pooled connection has waited at least as
long as the restart took, so each is checked, and a broken one is replaced
before any request sees it (tests/test_db_pool.py).
"""

from time import monotonic
from weakref import WeakKeyDictionary

from psycopg_pool import ConnectionPool

# Seconds a pooled connection may rest and still be handed out unchecked.
CHECK_AFTER = 1.0
# When each pooled connection was last handed out (forgotten with it). A
# connection is in one thread's hands at a time.
_handed_out_at: WeakKeyDictionary = WeakKeyDictionary()


def check_if_rested(connection) -> None:
    """psycopg_pool's check, for a connection that rested more than CHECK_AFTER
    since it was last handed out (or never was)."""
    now = monotonic()
    last = _handed_out_at.get(connection)
    if last is None or now - last > CHECK_AFTER:
        ConnectionPool.check_connection(connection)
    _handed_out_at[connection] = now
