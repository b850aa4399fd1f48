"""The fleet, for real: three `make serve` hosts (127.0.0.2-4) on one PostgreSQL
database, with and without one Redis, behind the distribution's nginx running
docs/deploying.md's configuration (tests/support/fleet.py). Everything goes through
nginx, as players would: sessions ended on one host end on all, moves reach
every host's watchers, and a host killed, every host restarted in turn, Redis
stopped or PostgreSQL restarted lose no move and no page (but one the killed
host had begun sending, which arrives cut short).

PostgreSQL pass only: SQLite is one host (its live news travels by local
sockets). Without nginx the tests skip and say how to install it; with
FLEET_REQUIRED=1 (CI) they fail instead.
"""

import signal
import time
from contextlib import ExitStack

import pytest

from ..support.fleet import (
    ADDRESSES,
    DRAW,
    SITE,
    Player,
    Reader,
    copy_checkout,
    move_seen,
    p95,
    running_fleet,
    until,
    wait_for,
)
from ..support.private_postgres import private_postgres

# Its p95 bounds hold on a quiet machine: the module runs alone, last (`timing`).
# Beside other tests, its hosts' CPU slowed every served test: the pass's
# parallel run took 100 s more for the 110 s it took off the timing run.
pytestmark = [
    pytest.mark.processes,
    pytest.mark.timing,
    pytest.mark.postgresql_only,
]

PASSWORD = "Fleet-test-password-1941"
HOSTS = len(ADDRESSES)


@pytest.fixture(scope="module", params=["redis", "no-redis"])
def fleet(request, tmp_path_factory):
    """Three hosts and nginx, with REDIS_URL (a Redis of the test's own) or
    without (PostgreSQL LISTEN/NOTIFY, on a PostgreSQL server of the fleet's
    own, which a test restarts); shared by the module's tests, each on players
    and games of its own. Each host runs the documented default WEB_CONCURRENCY."""
    directory = tmp_path_factory.mktemp(f"fleet-{request.param}")
    redis = request.param == "redis"
    with ExitStack() as stack:
        postgres = None if redis else stack.enter_context(private_postgres())
        fleet = stack.enter_context(
            running_fleet(
                directory,
                "fleet",
                redis=redis,
                postgres=postgres,
                env={"WEB_CONCURRENCY": "2"},
            )
        )
        warm_up(fleet)
        yield fleet


def figure(name: str, value) -> None:
    """A measured figure, in the test's output (`pytest -rP` shows it)."""
    print(f"{name}: {value}")


# The production set-up (one PostgreSQL, one Redis) only: these take longest.
WITH_REDIS = pytest.mark.parametrize("fleet", ["redis"], indirect=True)


def caught_up(streams, versions: dict[int, int], games) -> bool:
    """Whether every stream announced its game's version in `versions`."""
    by_path = {game.events(): versions[game.id] for game in games}
    return all(
        stream.last_id is not None and stream.last_id >= by_path[stream.path]
        for stream in streams
    )


def warm_up(fleet) -> None:
    """Games played through nginx with streams on every host, as a fleet in
    service has played them: each server process's first moves and streams
    open its connections (database, broker) and load what it caches, which
    the figures of a fleet in service do not include (a fresh fleet's first
    dozen moves took 30 to 160 ms to reach the watchers, the rest 10 to 25)."""
    games = fleet.games("warm-up", 4)
    streams, watching = watch(fleet, games, per_game=HOSTS * 2)
    try:
        play_watched(fleet, games, watching)
    finally:
        streams.close()


def play_watched(fleet, games, watching) -> tuple[list[float], int]:
    """A draw in every game through nginx, a move at a time, each seen by the
    game's watchers before the next: each delay from a move's sending to a
    watcher seeing it, and how many watchers never did (within 5 s)."""
    delays, missed = [], 0
    for ply in range(len(DRAW)):
        for game in games:
            mine = [s for s in watching if s.path == game.events()]
            answer, seen = move_seen(fleet, game, ply, mine, 5)
            assert answer.status == 302, answer
            missed += seen.count(None)
            delays += [delay for delay in seen if delay is not None]
    return delays, missed


def watch(fleet, games, per_game: int):
    """`per_game` streams of each game through nginx, spread over the hosts."""
    fleet.in_rotation()
    streams = fleet.streams()
    opened = streams.open_spread(
        [(game.events(), game.x) for game in games for _ in range(per_game)], HOSTS
    )
    versions = fleet.versions(games)
    wait_for(lambda: caught_up(opened, versions, games), "every stream's version")
    return streams, opened


# --- health --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_every_host_answers_a_probe_by_its_address(fleet, path):
    """A load balancer probes each host by its address, with no cookie, and
    leaves no ERROR line in the host's log."""
    for host in fleet.hosts:
        logged = len(host.log())
        status, headers, body = host.request(path, host=host.upstream)
        assert (status, headers.get_all("Set-Cookie")) == (200, None), body[:300]
        assert " ERROR " not in host.log()[logged:]


# --- sessions --------------------------------------------------------------------


def known_everywhere(fleet, session: str) -> None:
    """Lobby loads through nginx until every host has answered the session
    (and so cached it, if it caches sessions)."""
    answered = set()
    for _ in range(HOSTS * 10):
        answer = fleet.visitor(session).get("/")
        assert answer.status == 200, answer
        answered.add(answer.host)
        if len(answered) == HOSTS:
            return
    raise AssertionError(f"only {answered} answered")


def anonymous_everywhere(fleet, session: str) -> None:
    """The session's next request on every host is anonymous: the lobby sends
    it to the login page."""
    answers = {}
    for _ in range(HOSTS * 10):
        answer = fleet.visitor(session).get("/")
        answers.setdefault(answer.host, (answer.status, answer.location))
        if len(answers) == HOSTS:
            break
    expected = (302, "/accounts/login/?next=/")
    assert answers == {host.upstream: expected for host in fleet.hosts}


def end_delays(streams, after: float) -> list[float | None]:
    """How long after `after` each stream ended (None: open 3 s on)."""
    until(
        lambda: all(s.current.ended is not None for s in streams),
        timeout=after + 3.0 - time.monotonic(),
    )
    return [
        None if s.current.ended is None else round(s.current.ended - after, 3)
        for s in streams
    ]


def within(delays: list[float | None], seconds: float) -> bool:
    return all(delay is not None and delay <= seconds for delay in delays)


def test_a_logout_through_one_host_ends_the_session_on_every_host(fleet):
    [game] = fleet.games("logout", 1)
    fleet.in_rotation()
    known_everywhere(fleet, game.x)
    streams = fleet.streams(reconnect=False)
    try:
        watched = streams.open_spread([("/lobby/events/", game.x)] * HOSTS * 2, HOSTS)
        answer = fleet.visitor(game.x).post("/accounts/logout/")
        assert (answer.status, answer.location) == (302, "/accounts/login/"), answer
        anonymous_everywhere(fleet, game.x)
        ended = end_delays(watched, answer.sent + answer.seconds)
        assert within(ended, 1.0), ended
    finally:
        streams.close()


def test_a_password_change_through_one_host_ends_other_sessions_on_every_host(
    fleet,
):
    [game] = fleet.games("password", 1, password=PASSWORD)
    # x changes the password in one session; x's other session is ended.
    other_session = fleet.hosts[0].sessions_for([game.x_name])[game.x_name]
    fleet.in_rotation()
    for session in (game.x, other_session):
        known_everywhere(fleet, session)
    streams = fleet.streams(reconnect=False)
    try:
        watched = streams.open_spread(
            [("/lobby/events/", other_session)] * HOSTS * 2, HOSTS
        )
        new = PASSWORD + "-changed"
        answer = fleet.visitor(game.x).post(
            "/accounts/password/change/",
            {"oldpassword": PASSWORD, "password1": new, "password2": new},
        )
        assert answer.status == 302, answer
        anonymous_everywhere(fleet, other_session)
        ended = end_delays(watched, answer.sent + answer.seconds)
        assert within(ended, 1.0), ended
        # The session that changed the password, under its new key (Django
        # cycles it), stays logged in everywhere; its old key does not.
        assert answer.session not in (None, game.x)
        known_everywhere(fleet, answer.session)
        anonymous_everywhere(fleet, game.x)
    finally:
        streams.close()


# --- live play ---------------------------------------------------------------------


def test_a_move_through_nginx_reaches_watchers_on_every_host(fleet):
    games = fleet.games("latency", 4)
    streams, watching = watch(fleet, games, per_game=HOSTS * 2)
    try:
        for game in games:
            mine = [s for s in watching if s.path == game.events()]
            assert {s.open_on for s in mine} == {h.upstream for h in fleet.hosts}
        delays, missed = play_watched(fleet, games, watching)
        figure("event delay (s): p95, max", (p95(delays), max(delays)))
        assert missed == 0
        assert p95(delays) <= 0.050, sorted(delays)[-10:]
    finally:
        streams.close()


def lost_and_resent(fleet, player: Player, games) -> None:
    """No acknowledged move lost; each resent move applied once or refused."""
    stored = fleet.moves(games)
    assert {key: stored.get(key) for key in player.acknowledged} == (
        player.acknowledged
    )
    for key, statuses in player.resent:
        assert statuses[-1] in (302, 409), (key, statuses)
        assert stored[key] == DRAW[key[1]], (key, statuses)


@WITH_REDIS
def test_kill_9_of_one_host_during_play(fleet):
    games = fleet.games("kill", 30)
    streams, watching = watch(fleet, games, per_game=10)
    player = Player(fleet.port, games, pause=0.05)
    readers = [Reader(fleet.port, games) for _ in range(2)]
    victim = fleet.hosts[1]
    try:
        for thread in (player, *readers):
            thread.start()
        wait_for(lambda: len(player.acknowledged) >= 30, "steady play")
        # Stopped first, so requests pile up on it as on a dying host; then
        # the whole host (make, server, workers, task worker) killed at once.
        stopped_at = time.monotonic()
        victim.send_signal(signal.SIGSTOP)
        wait_for(
            lambda: _pending_post(player),
            "a move in flight to the stopped host",
            timeout=10,
        )
        killed_at = time.monotonic()
        victim.kill()
        versions = fleet.versions(games)
        reconnected_at = wait_for(
            lambda: all(s.open_on not in (None, victim.upstream) for s in watching),
            "every stream on a live host",
            timeout=10,
        )
        caught = wait_for(
            lambda: caught_up(watching, versions, games),
            "every stream caught up",
            timeout=killed_at + 10 - time.monotonic(),
        )
        player.stop()
        for reader in readers:
            reader.stop()
        pages = [a for r in readers for a in r.pages if a.sent >= stopped_at]
        # A page whose headers the victim had sent when it was stopped arrives
        # cut short: nginx cannot send again an answer it has begun to pass on.
        # Every other page is whole.
        cut = [a for a in pages if a.status == 0 and a.host == victim.upstream]
        assert [a.status for a in pages if a.status != 200 and a not in cut] == []
        wave = [a.seconds for a in pages if killed_at <= a.sent <= reconnected_at]
        figure(
            "streams on a live host, caught up (s after the kill)",
            (round(reconnected_at - killed_at, 2), round(caught - killed_at, 2)),
        )
        figure("game pages in the wave: count, p95 (s)", (len(wave), p95(wave)))
        figure("moves sent again (statuses)", player.resent)
        figure("pages cut short by the kill", len(cut))
        assert len(wave) >= 10
        assert p95(wave) < 0.300, sorted(wave)[-10:]
        lost_and_resent(fleet, player, games)
        assert player.resent, "no move was in flight when the host died"
        final = fleet.versions(games)
        wait_for(lambda: caught_up(watching, final, games), "the last moves")
    finally:
        player.stop()
        for reader in readers:
            reader.stop()
        streams.close()
        if victim.process.poll() is not None:
            victim.start()


def _pending_post(player: Player) -> bool:
    """Whether the player waits on a move far longer than a live host takes."""
    return player.waiting_since is not None and (
        time.monotonic() - player.waiting_since > 2.0
    )


@WITH_REDIS
def test_a_rolling_restart_under_play_fails_no_request(fleet, tmp_path):
    release = copy_checkout(tmp_path / "release-2")
    css = release / "static/games/app.css"
    css.write_text(css.read_text() + "\n/* release 2 */\n")
    games = fleet.games("rolling", 20)
    streams, watching = watch(fleet, games, per_game=6)
    player = Player(fleet.port, games, pause=0.1)
    readers = [Reader(fleet.port, games, assets=True) for _ in range(2)]
    try:
        for thread in (player, *readers):
            thread.start()
        wait_for(lambda: len(player.acknowledged) >= 20, "steady play")
        began = time.monotonic()
        for host in fleet.hosts:
            host.stop()  # SIGTERM: streams end, requests in hand finish
            host.release(release)
            host.start()
            # As docs/deploying.md says: the next host only once nginx sends this one
            # requests again (its fail_timeout), never two hosts out at once.
            fleet.in_rotation()
        player.stop()
        for reader in readers:
            reader.stop()
        figure("rolling restart (s)", round(time.monotonic() - began, 1))
        failed = [(a.status, a.upstream) for r in readers for a in r.pages]
        assert [f for f in failed if f[0] != 200] == [], fleet.nginx.error_log()
        assets = [(a.status, path) for r in readers for path, a in r.asset_answers]
        figure("pages, assets, moves", (len(failed), len(assets), len(player.answers)))
        figure("moves sent again (statuses)", player.resent)
        assert [a for a in assets if a[0] != 200] == []
        # Pages named the old stylesheet, then the new one, both served.
        assert len({path for _, path in assets if "/app." in path}) == 2
        lost_and_resent(fleet, player, games)
        final = fleet.versions(games)
        wait_for(lambda: caught_up(watching, final, games), "every stream caught up")
        # nginx passed on every GET a stopping host dropped (a POST it
        # dropped got a 502, and was sent again: lost_and_resent).
        answered = fleet.nginx.answered()
        assert [a for a in answered if a[0] >= 500 and a[1] == "GET"] == []
    finally:
        player.stop()
        for reader in readers:
            reader.stop()
        streams.close()


@WITH_REDIS
def test_redis_stopped_for_10_s_costs_no_request(fleet):
    games = fleet.games("redis", 10)
    streams, watching = watch(fleet, games, per_game=HOSTS)
    player = Player(fleet.port, games, pause=0.2)
    reader = Reader(fleet.port, games)
    try:
        for thread in (player, reader):
            thread.start()
        wait_for(lambda: len(player.acknowledged) >= 10, "steady play")
        fleet.redis.kill()
        stopped_at = time.monotonic()
        time.sleep(10)  # the outage's length, under play: no synchronisation
        fleet.redis.start()
        back_at = time.monotonic()
        player.stop()
        reader.stop()
        versions = fleet.versions(games)
        caught = wait_for(
            lambda: caught_up(watching, versions, games), "every stream caught up"
        )
        answers = player.answers + reader.pages
        failed = [a.status for a in answers if a.status >= 500 or a.status == 0]
        during = [a for a in answers if stopped_at <= a.sent <= back_at]
        figure("answers during the outage, failed", (len(during), len(failed)))
        figure("caught up (s after Redis's return)", round(caught - back_at, 2))
        assert len(during) >= 10
        assert failed == []
        assert caught - back_at <= 5.0
        lost_and_resent(fleet, player, games)
    finally:
        player.stop()
        reader.stop()
        streams.close()


# --- PostgreSQL restarted -----------------------------------------------------------


# The fleet without Redis: its PostgreSQL server is its own to restart.
@pytest.mark.parametrize("fleet", ["no-redis"], indirect=True)
def test_postgresql_restarted_pages_503_then_every_host_serves(fleet):
    server = fleet.postgres
    [game] = fleet.games("pg", 1)
    page = f"/games/{game.id}/"
    streams, watching = watch(fleet, [game], per_game=HOSTS)
    try:
        server.stop()
        stopped_at, down = time.monotonic(), []
        while time.monotonic() < stopped_at + 10:  # bounded: 10 s of outage
            down.append(fleet.visitor(game.x).get(page).status)
        assert set(down) == {503}, down
        server.start()
        back_at = time.monotonic()
        serving = {}
        for host in fleet.hosts:
            wait_for(
                lambda h=host: h.request(page, host=SITE, session=game.x)[0] == 200,
                f"{host.address} serving again",
            )
            serving[host.address] = round(time.monotonic() - back_at, 2)
        figure("seconds to serve again after PostgreSQL's return, per host", serving)
        assert max(serving.values()) <= 5.0, serving
        # Each host hears the database's news again: a move reaches them all.
        answer = fleet.visitor(game.x).post(
            f"/games/{game.id}/move/", {"row": 0, "col": 0, "ply": 0}
        )
        assert answer.status == 302, answer
        version = fleet.versions([game])[game.id]
        heard = until(lambda: all(s.first_seen(version) for s in watching), 5.0)
        assert heard is not None, {s.open_on: s.last_id for s in watching}
    finally:
        streams.close()
