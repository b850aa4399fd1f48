"""The production server for real: `make serve` (uvicorn, several worker
processes) on its own database of the current pass's engine, driven over HTTP.

Proves that concurrent players, double clicks, moves out of turn and forfeits
racing moves never corrupt a game, and that neither does kill -9 mid-storm.
"""

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from ..support.served import NO_DOT_ENV, PRODUCTION_ENV, ROOT, serving
from ..support.storm import Player, Storm, at_once

pytestmark = pytest.mark.processes

GAMES = 20
FINISHED = {"x_won", "o_won", "draw", "x_forfeits", "o_forfeits"}
REJECTIONS = {403, 409}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served")
    # The access log (off by default) records every answer, streams included.
    with serving(tmp_dir, "served", workers=3, WEB_ACCESS_LOG="1") as app:
        yield app


@pytest.fixture(scope="module")
def players(server) -> list[tuple[Player, Player]]:
    """40 logged-in clients, each with a session cookie and a CSRF token."""
    names = [f"{mark}{index:02}" for index in range(GAMES) for mark in "xo"]
    keys = server.sessions_for(names)
    pairs = []
    for index in range(GAMES):
        pair = []
        for mark in "XO":
            browser = server.browser(keys[f"{mark.lower()}{index:02}"])
            assert browser.get("/").status == 200  # the lobby sets the CSRF cookie
            assert "csrftoken" in browser.cookies
            pair.append(Player(browser, mark))
        pairs.append(tuple(pair))
    return pairs


def new_games(pairs) -> dict[int, tuple[Player, Player]]:
    games = {}
    for index, (x, o) in enumerate(pairs):
        response = x.browser.post("/games/new/", {"opponent": f"o{index:02}"})
        assert response.status == 302, response.text
        game_id = int(re.fullmatch(r"/games/(\d+)/", response.headers["Location"])[1])
        games[game_id] = (x, o)
    return games


def check_games(server) -> subprocess.CompletedProcess:
    return server.manage("check_games")


def stored_move_counter(server, game_ids) -> tuple[Counter, dict[int, dict]]:
    games, moves = server.stored()
    stored = Counter(
        (move["game"], move["row"], move["col"], move["player"])
        for move in moves
        if move["game"] in game_ids
    )
    return stored, {game["id"]: game for game in games if game["id"] in game_ids}


def accepted_counter(outcomes) -> Counter:
    return Counter(
        (o.game_id, *o.cell, o.mark)
        for o in outcomes
        if o.action == "move" and o.status == 302
    )


def summary(outcomes, seconds: float) -> str:
    posts = [o for o in outcomes if o.action != "state"]
    codes = Counter(o.status for o in posts)
    return (
        f"{len(outcomes)} requests ({len(posts)} POSTs) in {seconds:.1f}s: "
        f"302={codes[302]} 403={codes[403]} 409={codes[409]} "
        f"other={ {k: v for k, v in codes.items() if k not in (302, 403, 409)} }"
    )


# What serve.config() makes of WEB_ACCESS_LOG, printed by a fresh interpreter.
SHOW_ACCESS_LOG = (
    "from tictactoe_site.server import serve; print(serve.config().access_log)"
)


def assert_clean_log(server) -> None:
    log = server.log()
    assert "database is locked" not in log
    assert "Traceback" not in log
    statuses = server.answered()
    assert statuses[302], "no move in the access log: is WEB_ACCESS_LOG on?"
    assert not {status for status in statuses if status >= 500}, statuses


def test_concurrent_players_never_corrupt_a_game(server, players):
    games = new_games(players)
    started = time.monotonic()
    outcomes = Storm(games, seed=6).run()
    seconds = time.monotonic() - started
    print(summary(outcomes, seconds))

    assert not [o for o in outcomes if o.status is None or o.status >= 500]
    assert {o.status for o in outcomes if o.action == "state"} == {200}
    moves = [o for o in outcomes if o.action == "move"]
    assert {o.status for o in moves} <= {302} | REJECTIONS
    # Both kinds of rejection really happened: out of turn and double clicks.
    assert {403, 409} <= {o.status for o in moves}
    forfeits = [o for o in outcomes if o.action == "forfeit"]
    assert forfeits
    assert {o.status for o in forfeits} <= {302} | REJECTIONS

    stored, stored_games = stored_move_counter(server, set(games))
    # Every 302 is exactly one stored move, and every stored move got a 302.
    assert stored == accepted_counter(outcomes)
    for game_id, game in stored_games.items():
        assert game["status"] in FINISHED
        won_by_forfeit = [
            o for o in forfeits if o.game_id == game_id and o.status == 302
        ]
        assert len(won_by_forfeit) <= 1
        if won_by_forfeit:
            assert game["status"] == f"{won_by_forfeit[0].mark.lower()}_forfeits"
    assert any(game["status"].endswith("_forfeits") for game in stored_games.values())

    result = check_games(server)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all consistent" in result.stdout
    assert_clean_log(server)


def test_kill_9_mid_storm_leaves_every_game_consistent(server, players):
    games = new_games(players)
    storm = Storm(games, seed=9)
    runner = threading.Thread(target=storm.run)
    started = time.monotonic()
    runner.start()
    assert storm.wait_for_accepted_moves(30, timeout=120)
    server.kill()
    runner.join(timeout=120)
    assert not runner.is_alive()
    answered = [o for o in storm.outcomes if o.status is not None]
    assert all(o.status < 500 for o in answered)
    acknowledged = accepted_counter(storm.outcomes)
    lost = len(storm.outcomes) - len(answered)
    print(f"kill -9 after {sum(acknowledged.values())} acknowledged moves:", end=" ")
    print(summary(storm.outcomes, time.monotonic() - started), f"no answer={lost}")

    # Straight after the crash, before anything repairs anything.
    result = check_games(server)
    assert result.returncode == 0, result.stdout + result.stderr
    stored, stored_games = stored_move_counter(server, set(games))
    # Every acknowledged move survived; a request cut off mid-flight left either
    # a whole move or nothing.
    assert not acknowledged - stored
    assert any(game["status"] == "in_progress" for game in stored_games.values())

    server.start()
    finish = Storm(games, seed=10)
    finish.run()
    assert not [o for o in finish.outcomes if o.status is None or o.status >= 500]
    stored_after, finished_games = stored_move_counter(server, set(games))
    assert stored_after - stored == accepted_counter(finish.outcomes)
    assert {game["status"] for game in finished_games.values()} <= FINISHED
    result = check_games(server)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_clean_log(server)


def test_production_responses_carry_the_security_headers(server):
    plain = server.browser(https=False)
    health = plain.get("/readyz")
    assert (health.status, health.body) == (200, b"ok\n")
    assert health.headers.get_all("Set-Cookie") is None

    redirect = plain.get("/accounts/login/")
    assert redirect.status == 301
    assert redirect.headers["Location"] == (
        f"https://127.0.0.1:{server.port}/accounts/login/"
    )

    page = server.browser().get("/accounts/login/")
    assert page.status == 200
    headers = page.headers
    assert headers["Strict-Transport-Security"] == (
        "max-age=31536000; includeSubDomains; preload"
    )
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    cookie = headers["Set-Cookie"]
    assert cookie.startswith("csrftoken=")
    assert "Secure" in cookie
    assert "SameSite=Lax" in cookie

    # Static files: collected with hashed names, served by whitenoise for ever.
    stylesheet = re.search(r'href="(/static/[^"]+\.[0-9a-f]{12}\.css)"', page.text)[1]
    static = server.browser().get(stylesheet)
    assert static.status == 200
    assert "immutable" in static.headers["Cache-Control"]


def latest_start(log: str) -> str:
    """The log since the server last started (an earlier test may restart it)."""
    return log.rsplit("Started parent process", 1)[-1]


@pytest.mark.skipif(sys.platform != "linux", reason="CPU affinity is Linux's")
def test_each_server_process_runs_on_a_cpu_of_its_own(server):
    """tictactoe_site.server.cpus: the 3 processes take slots 0-2, and slot n runs on
    the n-th CPU the server may use, round robin."""
    allowed = sorted(os.sched_getaffinity(0))
    # /readyz answered once one process was up; each pins itself before it
    # reports its start-up complete.
    deadline = time.monotonic() + 60
    while latest_start(server.log()).count("Application startup complete.") < 3:
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.1)  # polling for the processes to boot, not for a race

    def cpus_of(pid: int) -> str:
        status = Path(f"/proc/{pid}/status").read_text()
        return re.search(r"^Cpus_allowed_list:\s*(\S+)$", status, re.M)[1]

    pinned = sorted(cpus_of(pid) for pid in server.worker_pids())
    assert pinned == sorted(str(allowed[slot % len(allowed)]) for slot in range(3))


def test_the_access_log_is_off_unless_asked_for():
    """The proxy in front logs requests (docs/settings.md, WEB_ACCESS_LOG); this
    module's server turns it on to see every answer."""

    def access_log(**env: str) -> str:
        """serve.config()'s access_log, as the server would start with `env`."""
        return subprocess.run(
            [sys.executable, "-c", SHOW_ACCESS_LOG],
            cwd=ROOT,
            env={"PATH": os.environ["PATH"], **NO_DOT_ENV, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()

    assert access_log() == "False"
    assert access_log(WEB_ACCESS_LOG="1") == "True"


def test_make_serve_refuses_to_start_without_a_secret_key():
    env = {key: value for key, value in PRODUCTION_ENV.items() if "SECRET" not in key}
    result = subprocess.run(
        ["make", "--no-print-directory", "serve"],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], **NO_DOT_ENV, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "make serve runs the production server and needs DJANGO_SECRET_KEY" in (
        result.stderr
    )


def test_simultaneous_creates_cannot_exceed_the_challenge_limits(server):
    """GAMES_MAX_UNSTARTED_PER_OPPONENT (3) and GAMES_MAX_UNSTARTED_PER_USER (10),
    the defaults: requests released together by a barrier, across the server's
    worker processes, still create no more games than the limits allow."""
    names = ["flooder", *(f"target{index:02}" for index in range(12))]
    flooder = server.browser(server.sessions_for(names)["flooder"])
    assert flooder.get("/").status == 200  # the CSRF cookie
    responses = []

    def create(opponent: str):
        return lambda: responses.append(
            flooder.post("/games/new/", {"opponent": opponent, "side": "x"})
        )

    at_once([create("target00") for _ in range(8)])
    assert sorted(r.status for r in responses) == [302] * 3 + [429] * 5
    refused = next(r for r in responses if r.status == 429)
    assert "You already have 3 games against target00" in refused.text

    responses.clear()
    at_once([create(f"target{index:02}") for index in range(1, 12)])
    # 3 unanswered games already: 7 more reach the limit of 10, 4 are refused.
    assert sorted(r.status for r in responses) == [302] * 7 + [429] * 4
    refused = next(r for r in responses if r.status == 429)
    assert "You already have 10 games in which your opponent has not moved" in (
        refused.text
    )

    games, _ = server.stored()
    created = next(r for r in responses if r.status == 302).headers["Location"]
    game_id = int(re.fullmatch(r"/games/(\d+)/", created)[1])
    flooder_id = next(game["created_by"] for game in games if game["id"] == game_id)
    assert sum(game["created_by"] == flooder_id for game in games) == 10
    assert_clean_log(server)
