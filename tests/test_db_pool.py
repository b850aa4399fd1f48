"""tictactoe_site.db_pool: the pool checks a connection that rested, not one
handed out again at once."""

import os
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from tictactoe_site import db_pool


class Connection:
    """What psycopg_pool's check uses of a connection: it runs an empty
    statement, in autocommit."""

    autocommit = True

    def __init__(self, *, broken: bool = False):
        self.broken = broken
        self.checks = 0

    def execute(self, statement: str) -> None:
        assert statement == ""
        self.checks += 1
        if self.broken:
            raise ConnectionError("server closed the connection unexpectedly")


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(db_pool, "monotonic", lambda: now[0])
    return now


def test_a_connection_is_checked_first_and_after_a_rest_only(clock):
    connection = Connection()
    db_pool.check_if_rested(connection)  # its first hand-out
    assert connection.checks == 1

    clock[0] += 0.9
    db_pool.check_if_rested(connection)
    clock[0] += 1.0
    db_pool.check_if_rested(connection)  # 1.0 s since the last hand-out
    assert connection.checks == 1

    clock[0] += 1.01
    db_pool.check_if_rested(connection)
    assert connection.checks == 2


def test_a_connection_that_fails_its_check_is_checked_again(clock):
    connection = Connection()
    db_pool.check_if_rested(connection)
    clock[0] += 5  # meanwhile the database restarted
    connection.broken = True
    with pytest.raises(ConnectionError):
        db_pool.check_if_rested(connection)
    with pytest.raises(ConnectionError):
        db_pool.check_if_rested(connection)  # at once: still checked
    assert connection.checks == 3


@pytest.mark.postgresql_only
def test_a_connection_the_server_dropped_while_it_rested_is_replaced(clock):
    """As after a database restart: the pool hands out a working connection."""
    # The server's maintenance database: the pass's own may not exist yet.
    url = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/postgres"))
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=1,
        kwargs={"autocommit": True},
        check=db_pool.check_if_rested,
        open=True,
    )
    try:
        with pool.connection() as connection:
            dropped = connection.info.backend_pid
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [dropped])
        clock[0] += 2
        with pool.connection() as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
            assert connection.info.backend_pid != dropped
    finally:
        pool.close()
