"""A database that does not answer gives a readable 503 page, never a 500.

The failure is injected where every query passes (the connection's cursor), so
it strikes wherever the request first touches the database: the session
middleware for a logged-in page. A move's is injected at its write (the game's
UPDATE, the move's INSERT), once the move has been decided. The real outage (a
PostgreSQL server stopped mid-play) is tests/served/test_database_outage.py.
"""

import pytest
from django.db import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
)
from django.test import Client

from games import sql

from ..conftest import snapshot_tables

MESSAGE = "The game server cannot reach its database right now. Try again in a moment."


class DatabaseDown:
    """Every query fails with the given exception until restored."""

    def __init__(self):
        self.connection = connections["default"]

    def __call__(self, exception: Exception) -> None:
        def refuse(*args, **kwargs):
            raise exception

        self.connection.cursor = refuse

    def restore(self) -> None:
        self.connection.__dict__.pop("cursor", None)


@pytest.fixture
def database_down(db):
    """Depends on `db` so that it is restored before the test's transaction is
    rolled back (which queries)."""
    down = DatabaseDown()
    yield down
    down.restore()


def browser_for(user) -> Client:
    """A logged-in client that gets error pages the way a browser does."""
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "exception",
    [
        OperationalError("connection refused"),
        OperationalError("couldn't get a connection after 3.00 sec"),
        InterfaceError("connection already closed"),
    ],
    ids=["refused", "pool-timeout", "closed"],
)
def test_page_while_the_database_is_down_is_a_503_with_a_message(
    game, bob, database_down, exception
):
    client = browser_for(bob)
    database_down(exception)
    response = client.get(f"/games/{game.pk}/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert "<h1>Try again in a moment</h1>" in html
    assert MESSAGE in html
    assert "Traceback" not in html
    assert str(exception) not in html


@pytest.mark.parametrize(
    "strikes",
    [sql.MOVE_UPDATE, sql.MOVE_INSERT],
    ids=["at-the-update", "at-the-insert"],
)
def test_a_move_whose_write_fails_is_a_503_and_stores_nothing(
    game, alice, play, strikes
):
    """The database goes away at the move's write: the game's UPDATE, or the
    move's INSERT after the UPDATE went through. The transaction stores neither,
    nor the result the move would have given (series, records)."""
    play(game, (0, 0), (1, 0), (0, 1), (1, 1))  # alice (X) wins at (0, 2)
    client = browser_for(alice)
    before = snapshot_tables()
    struck = []

    def lost_at_the_write(execute, sql, params, many, context):
        if sql == strikes:
            struck.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(lost_at_the_write):
        response = client.post(
            f"/games/{game.pk}/move/", {"row": 0, "col": 2, "ply": 4}
        )
    assert struck == [strikes]  # the move was decided and reached its write
    assert response.status_code == 503
    assert MESSAGE in response.content.decode()
    assert snapshot_tables() == before


def test_session_read_while_the_database_is_down_is_a_503(db, database_down):
    """The failure strikes in the middleware (loading the session), before any
    view runs."""
    database_down(OperationalError("connection refused"))
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "a" * 32
    response = client.get("/")
    assert response.status_code == 503
    assert MESSAGE in response.content.decode()


def test_other_database_errors_stay_500s(game, bob, database_down):
    """An IntegrityError is a bug, not an outage: it must not hide as a 503."""
    client = browser_for(bob)
    database_down(IntegrityError("duplicate key value"))
    response = client.get(f"/games/{game.pk}/")
    assert response.status_code == 500
    assert MESSAGE not in response.content.decode()
