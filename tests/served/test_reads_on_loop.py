"""The pages a player reads, against the app as `make serve` runs it: with
SQLite they run on the event loop (WEB_READS_ON_LOOP, tictactoe_site.server.asgi), and
the one write a read makes, the player's "last seen", follows the response in a
page thread (tictactoe_site.lib.deferred). With PostgreSQL the same pages run in
the page threads; the test holds for both."""

import json
import re
import time

import pytest

from ..support.served import serving

pytestmark = pytest.mark.processes

DEADLINE = 30  # seconds: bounds the wait for the deferred write, never slept out

LAST_SEEN = (
    "from accounts.models import TurnEmailPreference\n"
    "print(TurnEmailPreference.objects.get(user__username='alice').last_seen_at)\n"
)
OPT_IN = (
    "from accounts.models import TurnEmailPreference\n"
    "from django.contrib.auth import get_user_model\n"
    "alice = get_user_model().objects.get(username='alice')\n"
    "TurnEmailPreference.objects.create(user=alice, enabled=True)\n"
)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with serving(
        tmp_path_factory.mktemp("reads"), "reads", workers=1, WEB_ACCESS_LOG="1"
    ) as app:
        yield app


def last_seen(app) -> str:
    result = app.manage("shell", "-c", LAST_SEEN)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_every_page_a_player_reads_answers_and_records_the_player_as_seen(app):
    keys = app.sessions_for(["alice", "bob"])  # no login: not yet seen
    result = app.manage("shell", "-c", OPT_IN)
    assert result.returncode == 0, result.stderr
    alice = app.browser(keys["alice"])
    assert alice.get("/").status == 200  # the CSRF cookie
    response = alice.post("/games/new/", {"opponent": "bob", "side": "x"})
    assert response.status == 302, response.text
    game = re.fullmatch(r"/games/(\d+)/", response.headers["Location"])[1]
    pages = [
        "/",
        "/lobby/live/",
        f"/games/{game}/",
        f"/games/{game}/?ply=0",
        f"/games/{game}/live/",
        f"/games/{game}/state.json",
        "/players/bob/",
        "/games/archive/",
        "/livez",
        "/readyz",
        "/healthz",
    ]
    answers = {page: alice.get(page).status for page in pages}
    assert answers == dict.fromkeys(pages, 200)
    state = json.loads(alice.get(f"/games/{game}/state.json").text)
    assert state["status"] == "in_progress"
    assert app.answered()[500] == 0
    deadline = time.monotonic() + DEADLINE
    while last_seen(app) == "None" and time.monotonic() < deadline:
        continue  # each look is a manage.py run: the wait is bounded by DEADLINE
    assert last_seen(app) != "None"
