"""A connection on a server that refuses writes (a standby, or the old primary
come back as one, during a failover) is an outage, not a bug: the move gets the
readable 503, its connection is discarded, and the next request, on a new
connection, plays. Real refusals from PostgreSQL: the session is made read-only
(default_transaction_read_only), as a standby's are. The failover itself is
tests/fleet/test_failover.py."""

import pytest
from django.db import connection
from django.test import Client

from games.models import Move

pytestmark = [
    pytest.mark.postgresql_only,
    pytest.mark.django_db(transaction=True),
]

MESSAGE = "The game server cannot reach its database right now. Try again in a moment."


@pytest.fixture
def read_only():
    """Makes this thread's connection read-only, as a standby's are: returns its
    DB-API connection. Made writable again after, if it is still open (the
    test's tables are emptied through it)."""

    def make_read_only():
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION default_transaction_read_only = on")
        return connection.connection

    yield make_read_only
    if connection.connection is not None and not connection.connection.closed:
        with connection.cursor() as cursor:
            cursor.execute("RESET default_transaction_read_only")


def test_a_move_refused_as_read_only_is_a_503_and_its_connection_discarded(
    game, alice, read_only
):
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    refused_on = read_only()
    move = {"row": 1, "col": 1, "ply": 0}

    response = client.post(f"/games/{game.pk}/move/", move)

    assert response.status_code == 503
    assert MESSAGE in response.content.decode()
    assert response["Retry-After"] == "5"
    assert refused_on.closed
    assert Move.objects.filter(game=game).count() == 0
    # The next request has a connection that takes writes: the same move plays.
    assert client.post(f"/games/{game.pk}/move/", move).status_code == 302
    assert list(Move.objects.filter(game=game).values_list("row", "col")) == [(1, 1)]


def test_readiness_is_a_503_on_a_read_only_server_and_finds_the_primary_after(
    client, read_only
):
    refused_on = read_only()

    response = client.get("/readyz")

    assert (response.status_code, response.content) == (503, b"database read-only\n")
    assert refused_on.closed
    response = client.get("/readyz")
    assert (response.status_code, response.content) == (200, b"ok\n")
