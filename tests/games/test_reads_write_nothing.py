"""A page that only reads writes nothing in the ordinary course: with
WEB_READS_ON_LOOP such pages run on the event loop (tictactoe_site.server.asgi), where
a write could wait for SQLite's write lock with every live stream held up. The
pages are asked for as the bridge serves them (environ[DEFER] present), after a
real login, so with the login's message still to show and the player due to be
recorded as seen."""

import pytest
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.middleware import SEEN_CACHE, seen_key
from games import services
from tictactoe_site.lib.deferred import DEFER

from ..conftest import PASSWORD, X_WINS_ROW_0

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "SAVEPOINT")


def pages(alice, bob, play) -> list[str]:
    running = services.create_game(creator=alice, opponent=bob, side="x")
    finished = play(services.create_game(creator=bob, opponent=alice), *X_WINS_ROW_0)
    invitation = services.create_invitation(creator=bob)
    return [
        "/",
        "/lobby/live/",
        running.get_absolute_url(),
        f"{running.get_absolute_url()}live/",
        f"{running.get_absolute_url()}state.json",
        finished.get_absolute_url(),
        f"{finished.get_absolute_url()}?ply=3",
        invitation.get_absolute_url(),
        "/players/bob/",
        "/players/alice/",
        "/games/archive/",
        "/games/archive/?result=lost",
        "/games/999999/",  # a 404 page
        "/livez",
        "/readyz",
        "/healthz",
        "/workerz",
    ]


@pytest.mark.usefixtures("worker_beating")
def test_the_pages_a_player_reads_write_nothing(alice, bob, play):
    paths = pages(alice, bob, play)
    client = Client()
    response = client.post("/accounts/login/", {"login": "alice", "password": PASSWORD})
    assert response.status_code == 302
    caches[SEEN_CACHE].delete(seen_key(alice.pk))  # five minutes later
    deferred = []
    responses = {}
    with CaptureQueriesContext(connection) as queries:
        for path in paths:
            responses[path] = client.get(path, **{DEFER: deferred.append})
    answers = {path: response.status_code for path, response in responses.items()}
    assert answers == dict.fromkeys(paths, 200) | {"/games/999999/": 404}
    writes = [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].lstrip().upper().startswith(WRITES)
    ]
    assert writes == []
    assert len(deferred) == 1  # alice's "last seen", for after the response
    # The login's message was shown on the first page, from its cookie.
    assert "Successfully signed in as alice." in responses["/"].content.decode()
