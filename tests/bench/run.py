"""`make bench`: the app against Django's floor, side by side, on fresh databases.

For each database (SQLite; PostgreSQL when reachable) it seeds a small and a
large scenario, starts the app on each and the floor (tests/bench/floor_*.py)
with production settings, then drives load with wrk in rounds that interleave
app and floor runs, and prints requests/s, p50/p99 latency and server CPU per
request, each as a ratio to the floor, the move POST's requests/s also as a
ratio to the textbook move (a peer's move view, served beside the floor), the
large/small latency ratio and SQL queries per request. Then the stall section
(tests/bench/stall.py): live events and pages while logins hash passwords and
resets wait on a silent mail relay. Then, with PostgreSQL, the fleet section
(tests/bench/fleet.py): three hosts behind nginx, and the soak section
(tests/bench/soak.py) for 3 minutes: two hosts under steady play, watched for
anything piling up. Results also go to bench-results.json.

    python -m tests.bench.run [--duration 10] [--rounds 2] [--databases sqlite,postgres]
                              [--stall-duration 20] [--no-stall] [--no-fleet]
                              [--no-soak]
    python -m tests.bench.run --stall-only [options of tests/bench/stall.py]
    python -m tests.bench.run --fleet [options of tests/bench/fleet.py]
    python -m tests.bench.run --soak MINUTES [options of tests/bench/soak.py]
    python -m tests.bench.run --live-scale [options of tests/bench/live_scale.py]
"""

import argparse
import http.cookiejar
import itertools
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WRK_SCRIPT = Path(__file__).with_name("wrk.lua")
LIVE_LATENCY = Path(__file__).with_name("live_latency.py")
RESULTS = ROOT / "bench-results.json"
PORT = int(os.environ.get("BENCH_PORT", "8401"))
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
DB_PREFIX = os.environ.get("BENCH_DB_PREFIX", "ttt_bench")
SCENARIOS = ("small", "large")
MOVE_GAMES = 3000  # per move target: 9 moves each, split between the rounds
LIVE_GAMES = 50  # for the live-update benchmark
# The move targets that play on each scenario's database, each on games of its
# own: a move never lands on a game that another target has changed.
MOVE_TARGETS = {
    "small": ("move POST", "floor move", "textbook move"),
    "large": ("move POST",),
}
CONNECTIONS = 4

# --------------------------------------------------------------------------
# THE APP'S SERVER: the one place to switch how the app is served in the bench.
# As `make serve` runs it: debug off (django_env), 2 worker processes, each
# serving pages and live streams (tictactoe_site/server/serve.py), with its defaults.
# Returns the command and extra environment. The same app also runs under
# gunicorn's sync workers (floor_server_command) for the server-overhead line.


def app_server(port: int) -> tuple[list[str], dict[str, str]]:
    command = [sys.executable, "-m", "tictactoe_site.server.serve"]
    env = {"WEB_CONCURRENCY": "2", "HOST": "127.0.0.1", "PORT": str(port)}
    # The live benchmarks open thousands of streams as a handful of users.
    env["WEB_MAX_STREAMS_PER_USER"] = "1000000"
    return command, env


# --------------------------------------------------------------------------


def floor_server_command(port: int) -> list[str]:
    """The floor always runs on gunicorn with 2 sync workers (and so does the
    app, once, to measure what its own server costs)."""
    return [
        str(BIN / "gunicorn"),
        "tictactoe_site.wsgi",
        "--workers=2",
        "--worker-class=sync",
        "--no-control-socket",
        f"--bind=127.0.0.1:{port}",
    ]


SECRET_KEY = secrets.token_urlsafe(50)


def django_env(database_url: str, settings: str = "tictactoe_site.settings") -> dict:
    """Production settings, shared by the app, the floor and the manage commands."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_DEBUG"}
    env.update(
        DJANGO_SETTINGS_MODULE=settings,
        DJANGO_SECRET_KEY=SECRET_KEY,
        DJANGO_DEBUG="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SITE_URL="http://127.0.0.1",  # only this machine reaches it
        DATABASE_URL=database_url,
        PYTHONPATH=str(ROOT),
        # Not the developer's .env (python-dotenv's own switch).
        PYTHON_DOTENV_DISABLED="1",
    )
    return env


def manage(database_url: str, *args: str, settings: str = "tictactoe_site.settings"):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=django_env(database_url, settings),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


# ----------------------------------------------------------------- databases


class SQLite:
    name = "sqlite"

    def __init__(self, workdir: Path):
        self.workdir = workdir

    def create(self, scenario: str) -> str:
        path = self.workdir / f"{scenario}.sqlite3"
        for leftover in self.workdir.glob(f"{scenario}.sqlite3*"):
            leftover.unlink()
        return f"sqlite:///{path}"

    def drop(self, scenario: str) -> None:
        for leftover in self.workdir.glob(f"{scenario}.sqlite3*"):
            leftover.unlink()


class PostgreSQL:
    name = "postgres"

    def __init__(self, admin_url: str):
        self.admin_url = admin_url

    def reachable(self) -> bool:
        import psycopg

        try:
            psycopg.connect(self.admin_url, connect_timeout=3).close()
        except psycopg.OperationalError:
            return False
        return True

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(sql)

    def database(self, scenario: str) -> str:
        return f"{DB_PREFIX}_{scenario}"

    def create(self, scenario: str) -> str:
        name = self.database(scenario)
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin(f'CREATE DATABASE "{name}"')
        parts = urllib.parse.urlsplit(self.admin_url)
        return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))

    def drop(self, scenario: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{self.database(scenario)}" WITH (FORCE)')


# ------------------------------------------------------------------- servers


@dataclass
class Server:
    label: str
    command: list[str]
    env: dict
    port: int
    log: Path
    process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=log
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.label} exited; see {self.log}")
            try:
                urllib.request.urlopen(self.base_url + "/", timeout=5)
                return
            except urllib.error.HTTPError:
                return  # an answer: the server is up
            except OSError:
                time.sleep(0.3)
        raise SystemExit(f"{self.label} did not start in 60 s; see {self.log}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def cpu_seconds(self) -> float:
        """utime + stime of the worker processes (children of the master)."""
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:  # fields[1] is the ppid
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------- sessions


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@dataclass
class Session:
    """A user logged in through the real login form."""

    cookies: dict[str, str]
    csrf_token: str

    @property
    def header(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.cookies.items())


TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def log_in(base_url: str, username: str, password: str, token_page: str) -> Session:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(jar), NoRedirect
    )
    form = opener.open(base_url + "/accounts/login/").read().decode()
    data = urllib.parse.urlencode(
        {
            "login": username,
            "password": password,
            "csrfmiddlewaretoken": TOKEN.search(form).group(1),
        }
    ).encode()
    try:
        opener.open(base_url + "/accounts/login/", data)
        raise SystemExit(f"login of {username} at {base_url} failed")
    except urllib.error.HTTPError as redirect:
        if redirect.code != 302:
            raise
    page = opener.open(base_url + token_page).read().decode()
    cookies = {cookie.name: cookie.value for cookie in jar}
    return Session(cookies, TOKEN.search(page).group(1))


def status_of(url: str, session: Session, data: bytes | None = None) -> int:
    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data, headers={"Cookie": session.header})
    try:
        return opener.open(request).status
    except urllib.error.HTTPError as error:
        return error.code


# ----------------------------------------------------------------------- wrk


@dataclass
class Target:
    """One thing to load: a GET of a page, or move POSTs over a pool of games."""

    name: str
    scenario: str
    server: Server
    session: Session
    path: str = ""
    move_paths: list[list[str]] = field(default_factory=list)  # one list per round

    @property
    def key(self) -> str:
        return f"{self.name} [{self.scenario}]"


def run_wrk(target: Target, round_number: int, duration: int, workdir: Path) -> dict:
    headers = ["Connection: close", f"Cookie: {target.session.header}"]
    if target.move_paths:
        paths_file = workdir / f"paths-{target.server.label}-{round_number}.txt"
        paths_file.write_text("\n".join(target.move_paths[round_number]) + "\n")
        url = target.server.base_url + "/"
        args = ["move", target.session.csrf_token, str(paths_file), "012435768"]
        headers.append("Content-Type: application/x-www-form-urlencoded")
    else:
        url = target.server.base_url + target.path
        args = ["get", "200"]
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{duration}s", "--latency"]
    command += ["--timeout", "10s"]
    for header in headers:
        command += ["-H", header]
    command += ["-s", str(WRK_SCRIPT), url, "--", *args]
    cpu_before = target.server.cpu_seconds()
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    cpu = target.server.cpu_seconds() - cpu_before
    line = next(x for x in output.splitlines() if x.startswith("BENCH "))
    summary = json.loads(line.removeprefix("BENCH "))
    requests = summary["requests"]
    for sample in (x for x in output.splitlines() if x.startswith("UNEXPECTED ")):
        print(f"\n  {target.key}: {sample}", flush=True)
    return {
        "requests": requests,
        "rps": requests / (summary["duration_us"] / 1e6),
        "p50_ms": summary["p50_us"] / 1000,
        "p99_ms": summary["p99_us"] / 1000,
        "cpu_ms_per_request": 1000 * cpu / requests if requests else None,
        "unexpected_status": summary["unexpected"],
        "socket_errors": summary["socket_errors"],
    }


# ------------------------------------------------------------------ the run


def run_seed(
    url: str, scenario: str, password: str, move_games: int, manifest: Path
) -> dict:
    """tests/bench/seed.py on the database at `url`; its manifest."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.bench.seed",
            f"--scenario={scenario}",
            f"--password={password}",
            f"--move-games={move_games}",
            f"--manifest={manifest}",
        ],
        cwd=ROOT,
        env=django_env(url),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(manifest.read_text())


def seed(database, scenario: str, workdir: Path, password: str) -> tuple[str, dict]:
    started = time.monotonic()
    url = database.create(scenario)
    manage(url, "migrate", "--noinput")
    manifest_path = workdir / f"{database.name}-{scenario}.json"
    count = sum(move_game_uses(scenario).values())
    manifest = run_seed(url, scenario, password, count, manifest_path)
    manifest["path"] = str(manifest_path)
    took = time.monotonic() - started
    print(
        f"  {database.name} {scenario}: {manifest['users']} users, "
        f"{manifest['games']} games, {manifest['moves']} moves seeded in {took:.0f} s",
        flush=True,
    )
    return url, manifest


def chosen_databases(wanted: list[str], workdir: Path) -> list:
    """The databases named in `wanted` ("sqlite", "postgres"): PostgreSQL only
    when it answers at POSTGRES_URL."""
    databases = [SQLite(workdir)] if "sqlite" in wanted else []
    if "postgres" in wanted:
        postgres = PostgreSQL(POSTGRES_URL)
        if postgres.reachable():
            databases.append(postgres)
        else:
            print(f"PostgreSQL at {POSTGRES_URL}: not reachable, skipped")
    return databases


def seed_all(databases, workdir: Path, password: str) -> dict:
    """Every database and scenario at once, before any measurement: the seeding
    processes share the cores instead of taking turns."""
    print("seeding", flush=True)
    jobs = [(database, scenario) for database in databases for scenario in SCENARIOS]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {
            job: pool.submit(seed, job[0], job[1], workdir, password) for job in jobs
        }
        return {job: future.result() for job, future in futures.items()}


def move_game_uses(scenario: str) -> dict[str, int]:
    """How many of the mover's games each use takes: a pool per move target,
    the live benchmark's, and a fresh game for each query count (the app's
    moves; the floor's move and textbook move)."""
    pools = dict.fromkeys(MOVE_TARGETS[scenario], MOVE_GAMES)
    return pools | {"live": LIVE_GAMES, "app count": 1, "floor count": 1}


def move_games(manifest: dict) -> dict[str, list[int]]:
    """The mover's seeded games by use (move_game_uses), no game in two."""
    games = iter(manifest["move_games"])
    return {
        use: list(itertools.islice(games, count))
        for use, count in move_game_uses(manifest["scenario"]).items()
    }


def count_queries(
    url: str, manifest: dict, target: str, settings: str, game: int
) -> dict:
    output = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.bench.count_queries",
            manifest["path"],
            target,
            str(game),
        ],
        cwd=ROOT,
        env=django_env(url, settings),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def move_rounds(path: str, game_ids: list[int], rounds: int) -> list[list[str]]:
    """The POST paths of each round: `path` ("/games/{}/move/") for each game of
    the round's share of the pool."""
    per_round = len(game_ids) // rounds
    return [
        [path.format(game) for game in game_ids[r * per_round :][:per_round]]
        for r in range(rounds)
    ]


def bench_database(database, seeded: dict, password: str, args, workdir: Path):
    print(f"\n== {database.name} ==", flush=True)
    urls, manifests, servers = {}, {}, []
    for scenario in SCENARIOS:
        urls[scenario], manifests[scenario] = seeded[database, scenario]
    games = {scenario: move_games(manifests[scenario]) for scenario in SCENARIOS}
    queries = {
        scenario: count_queries(
            urls[scenario],
            manifests[scenario],
            "app",
            "tictactoe_site.settings",
            games[scenario]["app count"][0],
        )
        for scenario in SCENARIOS
    }
    queries["floor"] = count_queries(
        urls["small"],
        manifests["small"],
        "floor",
        "tests.bench.floor_settings",
        games["small"]["floor count"][0],
    )
    try:
        apps = {}
        for offset, scenario in enumerate(SCENARIOS, 1):
            command, extra_env = app_server(PORT + offset)
            apps[scenario] = Server(
                f"app-{scenario}",
                command,
                django_env(urls[scenario]) | extra_env,
                PORT + offset,
                workdir / f"{database.name}-app-{scenario}.log",
            )
        floor = Server(
            "floor",
            floor_server_command(PORT),
            django_env(urls["small"], "tests.bench.floor_settings"),
            PORT,
            workdir / f"{database.name}-floor.log",
        )
        gunicorn = Server(
            "app-gunicorn",
            floor_server_command(PORT + 3),
            django_env(urls["small"]),
            PORT + 3,
            workdir / f"{database.name}-app-gunicorn.log",
        )
        # The small scenario's app once more, metrics off: what they cost.
        command, extra_env = app_server(PORT + 4)
        metrics_off = Server(
            "app-metrics-off",
            command,
            django_env(urls["small"]) | extra_env | {"METRICS_ENABLED": "0"},
            PORT + 4,
            workdir / f"{database.name}-app-metrics-off.log",
        )
        servers = [floor, gunicorn, metrics_off, *apps.values()]
        for server in servers:
            server.start()
        targets, live = plan(apps, floor, manifests, games, password, args.rounds)
        small = manifests["small"]
        targets.insert(
            2,
            Target(
                "game page",
                "gunicorn",
                gunicorn,
                log_in(gunicorn.base_url, small["viewer"], password, "/"),
                f"/games/{small['page_game']}/",
            ),
        )
        targets.insert(
            2,  # right after the same page with metrics on
            Target(
                "game page",
                "metrics off",
                metrics_off,
                log_in(metrics_off.base_url, small["viewer"], password, "/"),
                f"/games/{small['page_game']}/",
            ),
        )
        rounds = measure(targets, args, workdir)
        live_result = measure_live(apps["small"], live, args)
    finally:
        for server in servers:
            server.stop()
    return {"queries": queries, "rounds": rounds, "live": live_result}


def plan(apps, floor, manifests, games, password, rounds):
    """The targets of one round, app and floor interleaved."""
    sessions = {}
    for scenario, app in apps.items():
        manifest = manifests[scenario]
        mover_page = f"/games/{games[scenario]['app count'][0]}/"
        sessions[scenario] = (
            log_in(app.base_url, manifest["viewer"], password, "/"),
            log_in(app.base_url, manifest["mover"], password, mover_page),
        )
    small = manifests["small"]
    viewer, mover = sessions["small"]
    floor_page = f"/floor/{small['page_game']}/"
    floor_moves = move_rounds("/floor/{}/move/", games["small"]["floor move"], rounds)
    textbook_moves = move_rounds(
        "/floor/{}/textbook-move/", games["small"]["textbook move"], rounds
    )
    targets = [Target("floor page", "floor", floor, viewer, floor_page)]
    targets += [
        Target("game page", s, apps[s], sessions[s][0], f"/games/{m['page_game']}/")
        for s, m in manifests.items()
    ]
    targets.append(Target("floor move", "floor", floor, mover, move_paths=floor_moves))
    targets.append(
        Target("textbook move", "floor", floor, mover, move_paths=textbook_moves)
    )
    targets += [
        Target(
            "move POST",
            s,
            apps[s],
            sessions[s][1],
            move_paths=move_rounds("/games/{}/move/", games[s]["move POST"], rounds),
        )
        for s in manifests
    ]
    targets += [Target("lobby", s, apps[s], sessions[s][0], "/") for s in manifests]
    targets += [
        Target(
            "state.json",
            s,
            apps[s],
            sessions[s][0],
            f"/games/{m['page_game']}/state.json",
        )
        for s, m in manifests.items()
    ]
    for target in targets:
        if (
            target.path
            and status_of(target.server.base_url + target.path, target.session) != 200
        ):
            raise SystemExit(f"{target.key}: {target.path} does not answer 200")
    live = (sessions["small"][1], games["small"]["live"])
    return targets, live


def measure(targets: list[Target], args, workdir: Path) -> dict:
    results: dict[str, list[dict]] = {target.key: [] for target in targets}
    for round_number in range(args.rounds):
        print(f"  round {round_number + 1}/{args.rounds}:", end="", flush=True)
        for target in targets:
            result = run_wrk(target, round_number, args.duration, workdir)
            results[target.key].append(result)
            print(f" {target.key} {result['rps']:.0f}/s", end=";", flush=True)
        print(flush=True)
    return results


def measure_live(app: Server, live, args) -> dict | None:
    if not LIVE_LATENCY.exists():
        print("  live updates: not present", flush=True)
        return None
    from tests.bench import live_latency

    session, game_ids = live
    print("  live updates: 200 streams...", flush=True)
    mover = session.cookies["sessionid"]  # the pool games are self-play
    return live_latency.measure(
        app.base_url, (mover, mover), game_ids, streams=200, moves=args.live_moves
    )


# ------------------------------------------------------------------- report

# (page, its floor, req/s ratio target, CPU-per-request ratio target: the game
# page at most 0.6x the floor's CPU, as `make serve` serves it by default)
PAGES = [
    ("game page", "floor page", 1.1, 0.6),
    ("move POST", "floor move", 1.0, None),
    ("lobby", "floor page", 1.0, None),
    ("state.json", "floor page", 1.5, None),
]
# The move as a peer's Django app takes it (tests/bench/floor_views.py
# textbook_move): a second yardstick for the move POST, (its name, req/s ratio
# target).
TEXTBOOK = {"move POST": ("textbook move", 1.2)}
QUERY_TARGETS = {"game page": 3, "move POST": 8, "lobby": 5, "state.json": 3}
# PostgreSQL may serve several hosts: every request reads its session from the
# database (settings.py), one query more than SQLite's shared session cache.
SESSION_QUERIES = {"sqlite": 0, "postgres": 1}
SERVER_OVERHEAD_TARGET = 0.05
# The game page's CPU with metrics on (the default) against the same app with
# METRICS_ENABLED=0 (tictactoe_site.ops.metrics).
METRICS_COST_TARGET = 0.05
LARGE_SMALL_TARGET = 1.25


def summarise(database: str, data: dict) -> dict:
    rounds = data["rounds"]
    rows = []

    def per_round(key: str, metric: str) -> list[float]:
        return [r[metric] for r in rounds[key]]

    def ratio(top: str, bottom: str, metric: str) -> float:
        """The median of the per-round ratios: rounds interleave, so each ratio
        compares two runs made under the same machine load."""
        pairs = zip(per_round(top, metric), per_round(bottom, metric), strict=True)
        return statistics.median(a / b for a, b in pairs)

    for name, floor_name, target, cpu_target in PAGES:
        floor_key = f"{floor_name} [floor]"
        small, large = f"{name} [small]", f"{name} [large]"
        textbook, textbook_target = TEXTBOOK.get(name, (None, None))
        textbook_ratio = (
            ratio(small, f"{textbook} [floor]", "rps") if textbook else None
        )
        rows.append(
            {
                "page": name,
                "rps": statistics.median(per_round(small, "rps")),
                "floor_rps": statistics.median(per_round(floor_key, "rps")),
                "rps_ratio": ratio(small, floor_key, "rps"),
                "rps_target": target,
                "textbook_ratio": textbook_ratio,
                "textbook_target": textbook_target,
                "p50_ms": statistics.median(per_round(small, "p50_ms")),
                "p99_ms": statistics.median(per_round(small, "p99_ms")),
                "cpu_ms": statistics.median(per_round(small, "cpu_ms_per_request")),
                "cpu_ratio": ratio(small, floor_key, "cpu_ms_per_request"),
                "cpu_target": cpu_target,
                "large_p50_ms": statistics.median(per_round(large, "p50_ms")),
                "large_small_p50": ratio(large, small, "p50_ms"),
                "large_small_cpu": ratio(large, small, "cpu_ms_per_request"),
                "queries_small": data["queries"]["small"][name],
                "queries_large": data["queries"]["large"][name],
                "queries_target": QUERY_TARGETS[name] + SESSION_QUERIES[database],
                "bad_responses": sum(
                    r["unexpected_status"] + r["socket_errors"]
                    for key in (small, large)
                    for r in rounds[key]
                ),
            }
        )
    floors = {
        name: {
            "rps": statistics.median(per_round(f"{name} [floor]", "rps")),
            "p50_ms": statistics.median(per_round(f"{name} [floor]", "p50_ms")),
            "p99_ms": statistics.median(per_round(f"{name} [floor]", "p99_ms")),
            "cpu_ms": statistics.median(
                per_round(f"{name} [floor]", "cpu_ms_per_request")
            ),
            "queries": data["queries"]["floor"][name],
            "bad_responses": sum(
                r["unexpected_status"] + r["socket_errors"]
                for r in rounds[f"{name} [floor]"]
            ),
        }
        for name in ("floor page", "floor move", "textbook move")
    }
    server = {
        "serve_cpu_ms": statistics.median(
            per_round("game page [small]", "cpu_ms_per_request")
        ),
        "gunicorn_cpu_ms": statistics.median(
            per_round("game page [gunicorn]", "cpu_ms_per_request")
        ),
        "overhead": ratio(
            "game page [small]", "game page [gunicorn]", "cpu_ms_per_request"
        )
        - 1,
        "rps_ratio": ratio("game page [small]", "game page [gunicorn]", "rps"),
    }
    metrics = {
        "on_cpu_ms": server["serve_cpu_ms"],
        "off_cpu_ms": statistics.median(
            per_round("game page [metrics off]", "cpu_ms_per_request")
        ),
        "cost": ratio(
            "game page [small]", "game page [metrics off]", "cpu_ms_per_request"
        )
        - 1,
        "rps_ratio": ratio("game page [small]", "game page [metrics off]", "rps"),
    }
    return {
        "database": database,
        "pages": rows,
        "floor": floors,
        "server": server,
        "metrics": metrics,
        "live": data["live"],
    }


def verdict(value: float, target: float | None, higher_is_better: bool) -> str:
    if target is None:
        return ""
    met = value >= target if higher_is_better else value <= target
    return "ok" if met else "MISS"


def print_table(summary: dict) -> None:
    print(f"\n{summary['database']}  (ratios: median of per-round ratios)")
    header = (
        f"{'page':<11} {'req/s':>6} {'floor':>6} {'ratio':>10} {'textbook':>10} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>7} {'cpu/floor':>9} "
        f"{'large/small p50':>16} "
        f"{'(cpu)':>9} "
        f"{'queries':>10}"
    )
    print(header)
    print("-" * len(header))
    for row in summary["pages"]:
        target = row["rps_target"]
        rps_ratio = f"{row['rps_ratio']:.2f}x"
        if target:
            rps_ratio += f" {verdict(row['rps_ratio'], target, True) or '':>4}"
        textbook = ""
        if row["textbook_ratio"] is not None:
            textbook = f"{row['textbook_ratio']:.2f}x " + verdict(
                row["textbook_ratio"], row["textbook_target"], True
            )
        large = f"{row['large_small_p50']:.2f} " + verdict(
            row["large_small_p50"], LARGE_SMALL_TARGET, False
        )
        cpu_ratio = f"{row['cpu_ratio']:.2f}x"
        if row["cpu_target"]:
            cpu_ratio += " " + verdict(row["cpu_ratio"], row["cpu_target"], False)
        queries = f"{row['queries_small']}/{row['queries_large']}"
        if row["queries_target"]:
            queries += " " + verdict(
                max(row["queries_small"], row["queries_large"]),
                row["queries_target"],
                False,
            )
        print(
            f"{row['page']:<11} {row['rps']:>6.0f} {row['floor_rps']:>6.0f} "
            f"{rps_ratio:>10} {textbook:>10} {row['p50_ms']:>7.1f} "
            f"{row['p99_ms']:>7.1f} {row['cpu_ms']:>7.2f} {cpu_ratio:>9} {large:>16} "
            f"{row['large_small_cpu']:>9.2f} "
            f"{queries:>10}"
        )
        if row["bad_responses"]:
            print(f"  !! {row['bad_responses']} unexpected responses or socket errors")
    for name, floor in summary["floor"].items():
        print(
            f"{name}: {floor['rps']:.0f} req/s, p50 {floor['p50_ms']:.1f} ms, "
            f"p99 {floor['p99_ms']:.1f} ms, cpu {floor['cpu_ms']:.2f} ms, "
            f"{floor['queries']} queries"
        )
        if floor["bad_responses"]:
            print(
                f"  !! {floor['bad_responses']} unexpected responses or socket errors"
            )
    server = summary["server"]
    print(
        f"server overhead (game page): make serve {server['serve_cpu_ms']:.2f} ms "
        f"CPU/request, the same app under gunicorn sync "
        f"{server['gunicorn_cpu_ms']:.2f} ms: {server['overhead']:+.0%} "
        f"{verdict(server['overhead'], SERVER_OVERHEAD_TARGET, False)} "
        f"(req/s {server['rps_ratio']:.2f}x gunicorn's)"
    )
    metrics = summary["metrics"]
    print(
        f"metrics (game page): on {metrics['on_cpu_ms']:.2f} ms CPU/request, off "
        f"{metrics['off_cpu_ms']:.2f} ms: {metrics['cost']:+.0%} "
        f"{verdict(metrics['cost'], METRICS_COST_TARGET, False)} "
        f"(req/s {metrics['rps_ratio']:.2f}x metrics off's)"
    )
    live = summary["live"]
    if live is not None:
        print(f"live updates: {json.dumps(live)}")


def main() -> None:
    if "--live-scale" in sys.argv:  # live updates at scale instead; its options follow
        from tests.bench import live_scale

        live_scale.main(sys.argv[sys.argv.index("--live-scale") + 1 :])
        return
    if "--fleet" in sys.argv:  # the fleet section alone; its options follow
        from tests.bench import fleet

        fleet.main(sys.argv[sys.argv.index("--fleet") + 1 :])
        return
    if "--soak" in sys.argv:  # the soak section alone, for MINUTES; options follow
        from tests.bench import soak

        options = sys.argv[sys.argv.index("--soak") + 1 :]
        sys.exit(0 if soak.main(["--minutes", *options[:1], *options[1:]]) else 1)
    if "--stall-only" in sys.argv:  # the stall section alone; its options follow
        from tests.bench import stall

        stall.main([arg for arg in sys.argv[1:] if arg != "--stall-only"])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--live-moves", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    parser.add_argument(
        "--stall-duration", type=float, default=20, help="seconds per stall phase"
    )
    parser.add_argument(
        "--no-stall", action="store_true", help="skip the stall section"
    )
    parser.add_argument(
        "--no-fleet", action="store_true", help="skip the fleet section (PostgreSQL)"
    )
    parser.add_argument(
        "--no-soak", action="store_true", help="skip the soak section (PostgreSQL)"
    )
    args = parser.parse_args()
    if args.duration < 10:
        parser.error("runs must last at least 10 s")
    if not shutil.which("wrk"):
        raise SystemExit("wrk is missing: apt-get install wrk")
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix=os.environ.get("BENCH_TMP", "ttt-bench-")))
    print(f"bench: work files in {workdir}", flush=True)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=django_env("sqlite://:memory:"),
        check=True,
    )
    wanted = args.databases.split(",")
    databases = chosen_databases(wanted, workdir)
    password = secrets.token_urlsafe(16)
    summaries = []
    try:
        seeded = seed_all(databases, workdir, password)
        for database in databases:
            data = bench_database(database, seeded, password, args, workdir)
            summaries.append({**summarise(database.name, data), "raw": data})
    finally:
        if not args.keep:
            for database in databases:
                for scenario in SCENARIOS:
                    database.drop(scenario)
    for summary in summaries:
        print_table(summary)
    RESULTS.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "duration_s": args.duration,
                "rounds": args.rounds,
                "connections": CONNECTIONS,
                "results": summaries,
            },
            indent=2,
        )
    )
    if not args.keep:
        shutil.rmtree(workdir)
    if not args.no_stall:
        from tests.bench import stall

        print(flush=True)
        stall.run_section(
            wanted, args.stall_duration, ROOT, PORT + stall.PORT_OFFSET, args.keep
        )
    if "postgres" in wanted and not args.no_fleet:
        from tests.bench import fleet

        print(flush=True)
        fleet.main([])
    if "postgres" in wanted and not args.no_soak:
        from tests.bench import soak

        print(flush=True)
        soak.main(["--minutes", "3"])
    print(f"\nwrote {RESULTS.name}; took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
