"""`make bench`, the stall section: does a slow request hold up pages and streams?

    python -m tests.bench.stall [--duration 20] [--databases sqlite,postgres]
                                [--app-root DIR] [--keep]

The app runs exactly as `make serve` runs it (`make serve` itself, started by
the tests' ServedApp in the app's checkout: 2 server processes, production
settings over plain HTTP with the real PBKDF2 password hasher, the task worker
beside them) on a freshly seeded database (tests/bench/seed.py), its SMTP relay
pointed at a local server that accepts connections and never answers
(tests/support/smtp_sink.py). After WARM_UP seconds of quiet load, three phases
run on it in turn, each `--duration` seconds under the same load:

- one client loads a game page back to back;
- a mover plays a move every 0.1 s, round robin over 30 games (self-play games
  of the seeded mover: each game's next move waits for its previous POST);
- one live stream per game (the opponent's session) records the time from the
  move's POST being sent to the event of that version (or a later one: the
  page then shows the latest state) arriving; a move whose event has not come
  within EVENT_DEADLINE is missed;

quiet; plus 2 logins a second with the correct password; plus, on top, a
password reset for a known address every 5 s. Each phase passes when live
event p95 <= 30 ms, max <= 300 ms, page p99 <= 20 ms, nothing is missed and
every response is the expected one. The table (with the move POST's own p95:
an event cannot come before its move is committed) goes to stdout, the figures
into bench-results.json ("stall").

`--app-root` serves another checkout of the app (its own `make install` done),
e.g. the code before a change, under the same load from this one: the routes it
drives are in ACCOUNTS and GAME_ROUTES.
"""

import argparse
import asyncio
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.live_latency import Http, _stream_lines, percentiles
from tests.bench.run import PORT, RESULTS, ROOT, chosen_databases
from tests.support.served import PLAIN_HTTP, ServedApp
from tests.support.smtp_sink import SmtpSink

# The account routes and form fields the load uses, as the current login and
# password-reset pages have them (templates/registration/, games/urls.py).
ACCOUNTS = {
    "login": "/accounts/login/",
    "login_fields": ("login", "password"),
    "password_reset": "/accounts/password/reset/",
    "password_reset_field": "email",
}
# Gives the seeded viewer a confirmed address (only those receive resets), in
# the app's own shell: with allauth's address model where the app has it.
KNOWN_ADDRESS_SCRIPT = """
from django.contrib.auth import get_user_model
user = get_user_model().objects.get(username=USERNAME)
user.email = ADDRESS
user.save()
try:
    from allauth.account.models import EmailAddress
except ImportError:
    pass
else:
    EmailAddress.objects.update_or_create(
        user=user, email=ADDRESS, defaults={"verified": True, "primary": True}
    )
"""
GAME_ROUTES = {
    "page": "/games/{}/",
    "state": "/games/{}/state.json",
    "move": "/games/{}/move/",
    "events": "/games/{}/events/?v={}",
}

GAMES = 30
MOVE_EVERY = 0.1  # seconds
LOGIN_EVERY = 0.5
RESET_EVERY = 5.0
EVENT_DEADLINE = 30.0  # seconds after its POST was sent: later is missed
# Seconds of quiet load, not reported, before the phases: each server process
# loads its templates and opens its database connection on its first requests.
WARM_UP = 2.0
FINISH_TIMEOUT = 120.0  # for requests still in flight when a phase ends
KNOWN_ADDRESS = "bench@example.com"
SERVER_PROCESSES = 2
PORT_OFFSET = 20  # from BENCH_PORT: run.py uses +0..+4, servers.py +10

# Targets (issue 21)
EVENT_P95_MS = 30
EVENT_MAX_MS = 300
PAGE_P99_MS = 20

TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass(frozen=True)
class Phase:
    name: str
    logins: bool
    resets: bool


PHASES = (
    Phase("quiet", logins=False, resets=False),
    Phase("+ 2 logins/s", logins=True, resets=False),
    Phase("+ a reset every 5 s", logins=True, resets=True),
)


# ------------------------------------------------------------------ the app


def served_app(
    app_root: Path, database_url: str, port: int, workdir: Path, smtp_port: int
) -> ServedApp:
    """`make serve` in `app_root` on `database_url`, over plain HTTP, with its
    mail relay at `smtp_port` (not started yet)."""
    app = ServedApp(
        database_url=database_url,
        tmp_dir=workdir,
        workers=SERVER_PROCESSES,
        port=port,
        app_root=app_root,
    )
    app.env |= PLAIN_HTTP | {
        # Unlimited resets and logins from one address: a long phase makes
        # more than the limits allow one client.
        "DJANGO_PASSWORD_RESET_LIMIT": "0",
        "DJANGO_LOGIN_FAILURE_LIMIT": "0",
        "DJANGO_EMAIL_HOST": "127.0.0.1",
        "DJANGO_EMAIL_PORT": str(smtp_port),
        # The default: a log line per game event, as `make serve` writes it.
        "GAMES_LOG_LEVEL": "INFO",
    }
    return app


def seed(app: ServedApp, password: str, pool: int, workdir: Path) -> dict:
    """Migrate and seed the small scenario, with `pool` games for the mover."""
    migrated = app.manage("migrate", "--noinput")
    if migrated.returncode:
        raise RuntimeError(f"migrate failed:\n{migrated.stderr}")
    manifest = workdir / "stall-manifest.json"
    subprocess.run(
        [
            app.python,
            "-m",
            "tests.bench.seed",
            "--scenario=small",
            f"--password={password}",
            f"--move-games={pool}",
            f"--manifest={manifest}",
        ],
        cwd=app.app_root,
        env=app.env,
        check=True,
        capture_output=True,
    )
    return json.loads(manifest.read_text())


# ---------------------------------------------------------------- sessions


def set_cookies(headers) -> dict[str, str]:
    return {
        value.split("=", 1)[0]: value.split(";", 1)[0].split("=", 1)[1]
        for name, value in headers
        if name == "set-cookie"
    }


@dataclass
class Form:
    """Cookies and the CSRF token to POST a form with."""

    cookies: dict[str, str]
    token: str

    def body(self, **fields) -> bytes:
        return urllib.parse.urlencode(
            {**fields, "csrfmiddlewaretoken": self.token}
        ).encode()


async def anonymous_form(http: Http) -> Form:
    status, headers, html = await http.request("GET", ACCOUNTS["login"], {})
    if status != 200:
        raise RuntimeError(f"{ACCOUNTS['login']} answered {status}")
    return Form(set_cookies(headers), TOKEN.search(html)[1].decode())


async def log_in(http: Http, form: Form, username: str, password: str) -> tuple:
    """POST the login form: (status, cookies set)."""
    name_field, password_field = ACCOUNTS["login_fields"]
    body = form.body(**{name_field: username, password_field: password})
    status, headers, _ = await http.request(
        "POST", ACCOUNTS["login"], form.cookies, body
    )
    return status, set_cookies(headers)


async def session(http: Http, username: str, password: str) -> Form:
    """A logged-in user's cookies and a CSRF token from the lobby."""
    anonymous = await anonymous_form(http)
    status, cookies = await log_in(http, anonymous, username, password)
    if status != 302 or "sessionid" not in cookies:
        raise RuntimeError(f"login of {username} answered {status}")
    cookies = anonymous.cookies | cookies
    status, headers, html = await http.request("GET", "/", cookies)
    if status != 200:
        raise RuntimeError(f"the lobby answered {status} to {username}")
    return Form(cookies | set_cookies(headers), TOKEN.search(html)[1].decode())


def give_known_address(app: ServedApp, username: str) -> None:
    script = KNOWN_ADDRESS_SCRIPT.replace("USERNAME", repr(username)).replace(
        "ADDRESS", repr(KNOWN_ADDRESS)
    )
    given = app.manage("shell", "-c", script)
    if given.returncode:
        raise RuntimeError(f"giving {username} an address failed:\n{given.stderr}")


@dataclass
class Setup:
    viewer: Form
    mover: Form
    watcher: Form  # the opponent's streams: another session of the mover
    anonymous: Form
    page: str
    pool: list[int]
    draw_order: str
    password: str
    viewer_name: str


async def prepare(base_url: str, manifest: dict, password: str) -> Setup:
    http = Http(base_url)
    viewer = await session(http, manifest["viewer"], password)
    return Setup(
        viewer=viewer,
        mover=await session(http, manifest["mover"], password),
        watcher=await session(http, manifest["mover"], password),
        anonymous=await anonymous_form(http),
        page=GAME_ROUTES["page"].format(manifest["page_game"]),
        pool=manifest["move_games"],
        draw_order=manifest["draw_order"],
        password=password,
        viewer_name=manifest["viewer"],
    )


# ------------------------------------------------------------------ a phase


@dataclass
class Tally:
    page_ms: list[float] = field(default_factory=list)
    event_ms: dict[tuple[int, int], float] = field(default_factory=dict)
    sent: dict[tuple[int, int], float] = field(default_factory=dict)  # (game, version)
    acknowledged: list[tuple[int, int]] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    login_ms: list[float] = field(default_factory=list)
    reset_ms: list[float] = field(default_factory=list)
    unexpected: dict[str, int] = field(default_factory=dict)
    reconnects: int = 0

    def expect(self, what: str, status: int, expected: int) -> None:
        if status != expected:
            key = f"{what} {status}"
            self.unexpected[key] = self.unexpected.get(key, 0) + 1


async def timed(coroutine) -> tuple[float, object]:
    started = time.perf_counter()
    result = await coroutine
    return (time.perf_counter() - started) * 1000, result


async def run_phase(
    base_url: str, setup: Setup, phase: Phase, games: list[int], duration: float
) -> dict:
    http = Http(base_url)
    tally = Tally()
    first_version = {}
    for game in games:
        _, _, body = await http.request(
            "GET", GAME_ROUTES["state"].format(game), setup.mover.cookies
        )
        first_version[game] = json.loads(body)["version"]
    played = dict.fromkeys(games, 0)
    locks = {game: asyncio.Lock() for game in games}
    opened = asyncio.Semaphore(0)

    async def watch(game: int) -> None:
        seen = first_version[game]
        while True:
            path = GAME_ROUTES["events"].format(game, seen)
            reader, writer, headers = await http.stream(
                path, setup.watcher.cookies["sessionid"]
            )
            opened.release()
            try:
                chunked = ("transfer-encoding", "chunked") in headers
                async for line in _stream_lines(reader, chunked):
                    if not line.startswith(b"id: "):
                        continue
                    arrived = time.perf_counter()
                    version = int(line[4:])
                    for earlier in range(seen + 1, version + 1):
                        sent = tally.sent.get((game, earlier))
                        if sent is not None:
                            tally.event_ms[game, earlier] = (arrived - sent) * 1000
                    seen = max(seen, version)
            finally:
                writer.close()
            tally.reconnects += 1

    async def move(game: int) -> None:
        async with locks[game]:
            ply = played[game]
            cell = int(setup.draw_order[ply])
            version = first_version[game] + ply + 1
            body = setup.mover.body(row=cell // 3, col=cell % 3, ply=ply)
            tally.sent[game, version] = time.perf_counter()
            status, _, _ = await http.request(
                "POST", GAME_ROUTES["move"].format(game), setup.mover.cookies, body
            )
            tally.move_ms.append(
                (time.perf_counter() - tally.sent[game, version]) * 1000
            )
            tally.expect("move", status, 302)
            if status == 302:
                played[game] += 1
                tally.acknowledged.append((game, version))
            else:
                del tally.sent[game, version]

    async def load_pages(until: float) -> None:
        while time.perf_counter() < until:
            elapsed, (status, _, _) = await timed(
                http.request("GET", setup.page, setup.viewer.cookies)
            )
            tally.page_ms.append(elapsed)
            tally.expect("page", status, 200)

    async def login() -> None:
        elapsed, (status, _) = await timed(
            log_in(http, setup.anonymous, setup.viewer_name, setup.password)
        )
        tally.login_ms.append(elapsed)
        tally.expect("login", status, 302)

    async def reset() -> None:
        body = setup.anonymous.body(**{ACCOUNTS["password_reset_field"]: KNOWN_ADDRESS})
        elapsed, (status, _, _) = await timed(
            http.request(
                "POST", ACCOUNTS["password_reset"], setup.anonymous.cookies, body
            )
        )
        tally.reset_ms.append(elapsed)
        tally.expect("reset", status, 302)

    watchers = [asyncio.create_task(watch(game)) for game in games]
    for _ in games:
        await asyncio.wait_for(opened.acquire(), 30)
    start = time.perf_counter()
    until = start + duration
    schedule = [
        (k * MOVE_EVERY, move, (move_order(games, k),))
        for k in range(round(duration / MOVE_EVERY))
    ]
    if phase.logins:
        schedule += [
            (k * LOGIN_EVERY, login, ()) for k in range(round(duration / LOGIN_EVERY))
        ]
    if phase.resets:
        schedule += [
            (k * RESET_EVERY, reset, ())
            for k in range(math.ceil(duration / RESET_EVERY))
        ]
    schedule.sort(key=lambda item: item[0])
    tasks = [asyncio.create_task(load_pages(until))]
    for at, action, args in schedule:
        await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
        tasks.append(asyncio.create_task(action(*args)))
    await asyncio.wait(tasks, timeout=FINISH_TIMEOUT)
    # Every acknowledged move's event, or its deadline.
    while any(
        key not in tally.event_ms
        and time.perf_counter() < tally.sent[key] + EVENT_DEADLINE
        for key in tally.acknowledged
    ):
        await asyncio.sleep(0.05)
    for task in [*watchers, *tasks]:
        task.cancel()
    await asyncio.gather(*watchers, *tasks, return_exceptions=True)
    return summarise(phase, tally)


def move_order(games: list[int], k: int) -> int:
    """The game of the k-th move: round robin over GAMES games at a time, nine
    moves each, then the next GAMES."""
    batch, within = divmod(k, GAMES * 9)
    return games[batch * GAMES + within % GAMES]


def games_per_phase(duration: float) -> int:
    moves = round(duration / MOVE_EVERY)
    return GAMES * max(1, math.ceil(moves / (GAMES * 9)))


def summarise(phase: Phase, tally: Tally) -> dict:
    on_time = [
        tally.event_ms[key]
        for key in tally.acknowledged
        if tally.event_ms.get(key, math.inf) <= EVENT_DEADLINE * 1000
    ]
    events = percentiles(on_time)
    pages = percentiles(tally.page_ms)
    missed = len(tally.acknowledged) - len(on_time)
    failures = []
    if missed:
        failures.append(f"{missed} missed")
    if events.get("p95_ms", 0) > EVENT_P95_MS:
        failures.append(f"event p95 > {EVENT_P95_MS} ms")
    if events.get("max_ms", 0) > EVENT_MAX_MS:
        failures.append(f"event max > {EVENT_MAX_MS} ms")
    if pages.get("p99_ms", 0) > PAGE_P99_MS:
        failures.append(f"page p99 > {PAGE_P99_MS} ms")
    if tally.unexpected:
        failures.append("unexpected responses")
    return {
        "phase": phase.name,
        "pages": pages,
        "moves": len(tally.acknowledged),
        "move_post": percentiles(tally.move_ms),
        "events": events,
        "missed": missed,
        "logins": percentiles(tally.login_ms),
        "resets": percentiles(tally.reset_ms),
        "unexpected": tally.unexpected,
        "stream_reconnects": tally.reconnects,
        "passed": not failures,
        "failures": failures,
    }


# ------------------------------------------------------------------ the run


def measure(
    app_root: Path, database_url: str, duration: float, port: int, workdir: Path
) -> list[dict]:
    """Seed the database at `database_url`, serve the app on it and run every
    phase; the phases' results."""
    password = secrets.token_urlsafe(16)
    per_phase = games_per_phase(duration)
    pool = games_per_phase(WARM_UP) + per_phase * len(PHASES)
    with SmtpSink(silent=True) as relay:
        app = served_app(app_root, database_url, port, workdir, relay.port)
        manifest = seed(app, password, pool, workdir)
        give_known_address(app, manifest["viewer"])
        base_url = f"http://127.0.0.1:{app.port}"
        app.start()
        try:
            setup = asyncio.run(prepare(base_url, manifest, password))
            warm_up = games_per_phase(WARM_UP)
            quiet = PHASES[0]
            asyncio.run(
                run_phase(base_url, setup, quiet, setup.pool[:warm_up], WARM_UP)
            )
            results = []
            for index, phase in enumerate(PHASES):
                first = warm_up + index * per_phase
                games = setup.pool[first : first + per_phase]
                result = asyncio.run(run_phase(base_url, setup, phase, games, duration))
                print(
                    f"  {phase.name}: {'ok' if result['passed'] else 'MISS'}",
                    flush=True,
                )
                results.append(result)
        finally:
            app.stop()
    return results


def cell(summary: dict, *keys: str) -> str:
    if not summary.get("count"):
        return "-"
    return "/".join(f"{summary[key]:.0f}" for key in keys)


def print_table(
    database: str, label: str, results: list[dict], duration: float
) -> None:
    print(
        f"\nstall, {database}, {label}: {SERVER_PROCESSES} server processes, "
        f"{duration:g} s per phase (ms)"
    )
    header = (
        f"{'phase':<20} {'page p50':>8} {'p99':>6} {'event p50':>9} {'p95':>6} "
        f"{'max':>7} {'move p95':>8} {'missed':>6} {'login p50/max':>13} "
        f"{'reset p50/max':>13}  verdict"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        pages, events = row["pages"], row["events"]
        print(
            f"{row['phase']:<20} {pages['p50_ms']:>8.1f} {pages['p99_ms']:>6.1f} "
            f"{cell(events, 'p50_ms'):>9} {cell(events, 'p95_ms'):>6} "
            f"{cell(events, 'max_ms'):>7} {cell(row['move_post'], 'p95_ms'):>8} "
            f"{row['missed']:>6} "
            f"{cell(row['logins'], 'p50_ms', 'max_ms'):>13} "
            f"{cell(row['resets'], 'p50_ms', 'max_ms'):>13}  "
            + ("ok" if row["passed"] else "MISS: " + ", ".join(row["failures"]))
        )
        if row["unexpected"]:
            print(f"  !! unexpected responses: {row['unexpected']}")


def save(section: dict) -> None:
    """Into bench-results.json under "stall", keeping what the page section wrote."""
    try:
        results = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        results = {}
    results["stall"] = section
    RESULTS.write_text(json.dumps(results, indent=2))


def run_section(
    databases: list[str],
    duration: float,
    app_root: Path,
    port: int,
    keep: bool = False,
) -> dict:
    """The stall section on each database: its results, also printed and saved."""
    workdir = Path(tempfile.mkdtemp(prefix=os.environ.get("BENCH_TMP", "ttt-stall-")))
    print(f"stall: work files in {workdir}", flush=True)
    label = "this checkout" if app_root == ROOT else str(app_root)
    section = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "app_root": str(app_root),
        "duration_s": duration,
        "results": [],
    }
    for engine in chosen_databases(databases, workdir):
        print(f"== stall on {engine.name} ==", flush=True)
        url = engine.create("stall")
        try:
            phases = measure(app_root, url, duration, port, workdir)
        finally:
            engine.drop("stall")
        section["results"].append({"database": engine.name, "phases": phases})
    for result in section["results"]:
        print_table(result["database"], label, result["phases"], duration)
    save(section)
    if not keep:
        shutil.rmtree(workdir)
    return section


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=20, help="seconds per phase")
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument(
        "--app-root",
        type=Path,
        default=ROOT,
        help="the checkout of the app to serve (default: this one)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work files (server logs)"
    )
    args = parser.parse_args(argv)
    run_section(
        args.databases.split(","),
        args.duration,
        args.app_root.resolve(),
        PORT + PORT_OFFSET,
        args.keep,
    )


if __name__ == "__main__":
    main()
