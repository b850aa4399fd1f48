"""A database that does not answer gives a readable 503 page, never a 500.

The failure is injected where every query passes (the connection's cursor), so
it strikes wherever the request first touches the database: the session
middleware for a logged-in page, the service for a move. The real outage (a
PostgreSQL server stopped mid-play) is tests/test_database_outage.py.
"""

import pytest
from django.db import IntegrityError, InterfaceError, OperationalError, connections
from django.test import Client

from games.models import Game, Move

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


def test_move_while_the_database_is_down_is_a_503_and_stores_nothing(
    game, alice, database_down
):
    client = browser_for(alice)
    database_down(OperationalError("server closed the connection unexpectedly"))
    response = client.post(f"/games/{game.pk}/move/", {"row": 1, "col": 1, "ply": 0})
    assert response.status_code == 503
    assert MESSAGE in response.content.decode()
    database_down.restore()  # the database is back: read what is stored
    assert Move.objects.filter(game=game).count() == 0
    assert Game.objects.get(pk=game.pk).move_count == 0


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
