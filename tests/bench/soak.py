"""The soak: steady play for `--minutes` on two `make serve` hosts behind nginx,
on one PostgreSQL database and one Redis (the fleet's harness,
tests/support/fleet.py), watching that nothing piles up.

    python -m tests.bench.soak [--minutes 3] [--streams 2000] [--games 300]
                               [--moves-per-second 20] [--pages-per-second 5]

Play: `--moves-per-second` moves through nginx round `--games` games (each a
draw, but the first of each slot is forfeited after 1 to 9 moves so that games
end evenly over the run; a finished game's rematch takes its place, and the
finished game's streams reconnect to the rematch), `--streams` live streams
over the games, a sign-up every 10 s and a login every 5 s, and
`--pages-per-second` game pages. The
hosts run tests/bench/soak_settings.py (sessions expire after a minute) so the
worker's housekeeping, every heartbeat (15 s), has expired sessions to delete.

Once a minute (every 15 s in runs shorter than 10 minutes): every process's RSS
and open files (/proc; judged per process and per host, streams' sockets move
between a host's processes), the database's connections (pg_stat_activity), the rows
of the tables housekeeping trims, and the page p50/p99 and event p95 since the
last sample. The verdict (tests/bench/soak_verdict.py) judges them; figures to
artifacts/soak-results.json, the plot to artifacts/soak.png (tests/bench/soak_plot.py).

Needs nginx, redis-server and PostgreSQL at BENCH_POSTGRES_URL; exits 1 when
the verdict fails.
"""

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from tests.bench import soak_plot, soak_verdict
from tests.bench.fleet import drop_database, fresh_database
from tests.bench.soak_plot import owner_sums
from tests.support.fleet import DRAW, Fleet, Game, Nginx, Visitor
from tests.support.private_redis import PrivateRedis
from tests.support.served import ROOT

RESULTS = ROOT / "artifacts" / "soak-results.json"
PLOT = ROOT / "artifacts" / "soak.png"
HOSTS = 2
# Rows housekeeping trims, and how long each is kept (seconds, and a heartbeat):
# sessions as tests/bench/soak_settings.py sets them, rate-limit counts for
# allauth's windows of a minute (login, sign-up; the failed-login count's
# DJANGO_LOGIN_COOLOFF_MINUTES set to 1), finished tasks for a day (KEEP_RESULTS).
TABLES = {
    "sessions": ("django_session", 60 + 15),
    "rate limit counts": ("accounts_ratelimitcount", 60 + 15),
    "finished tasks": (
        "django_tasks_database_dbtaskresult WHERE finished_at IS NOT NULL",
        86400,
    ),
}
SLACK = {"files": 5, "connections": 2, "table": 20}  # chance openings, rows
EVENT_WAIT = 10.0  # seconds a stream has to announce a move
PASSWORD = "soak-pass-4821-word"
LOCATION_GAME = re.compile(r"/games/(\d+)/")


class Play:
    """The load, on threads; what it saw, with when (monotonic)."""

    def __init__(self, fleet: Fleet, games: list[Game], args):
        self.fleet = fleet
        self.games = games  # each slot's game now
        self.plies = [0] * len(games)
        # Each slot's first game ends (forfeited) after 1 to 9 moves, so that
        # games end, and their streams reconnect, evenly over the run, not in
        # one wave every nine rounds.
        self.ends = [1 + n % len(DRAW) for n in range(len(games))]
        self.busy = [False] * len(games)
        self.args = args
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.moves: list[tuple[float, int]] = []  # (sent, game id), acknowledged
        self.pages: list[tuple[float, float]] = []  # (sent, seconds)
        self.statuses: dict[str, dict[int | str, int]] = {}
        self.failures: dict[str, str] = {}  # the first body of each failure
        self.streams = fleet.streams()
        self.watching: list[list] = [[] for _ in games]  # each slot's streams
        self.accounts: list[str] = []
        self.threads: list[threading.Thread] = []

    def count(self, kind: str, answer) -> None:
        """One answer of `kind`; a redirect to the login page apart."""
        status = answer.status
        if status == 302 and answer.location.startswith("/accounts/login/"):
            status = "302 to login"
        if status == 0 or status >= 500:
            self.failures.setdefault(f"{kind} {status}", answer.body[:300])
        with self.lock:
            counts = self.statuses.setdefault(kind, {})
            counts[status] = counts.get(status, 0) + 1

    def open_streams(self) -> None:
        for n in range(self.args.streams):
            slot = n % len(self.games)
            game = self.games[slot]
            self.watching[slot].append(self.streams.open(game.events(), game.x))

    def start(self) -> None:
        for target in (self.mover, self.reader, self.signups, self.logins):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def paced(self, per_second: float, action, workers: int = 1) -> None:
        """`action()` `per_second` times a second (on `workers` threads) until
        the play stops; a late start does not bunch up the next ones."""
        with ThreadPoolExecutor(workers) as pool:
            due = time.monotonic()
            while not self.stopping.wait(max(0.0, due - time.monotonic())):
                pool.submit(action)
                due = max(due + 1 / per_second, time.monotonic() - 1)

    def mover(self) -> None:
        turn = iter(range(10**12))

        def move():
            with self.lock:
                free = [s for s in range(len(self.games)) if not self.busy[s]]
                if not free:
                    return
                slot = free[next(turn) % len(free)]
                self.busy[slot] = True
            try:
                self.play(slot)
            finally:
                self.busy[slot] = False

        self.paced(self.args.moves_per_second, move, workers=8)

    def play(self, slot: int) -> None:
        game, ply = self.games[slot], self.plies[slot]
        if ply == self.ends[slot]:  # over: the rematch takes the slot
            if ply < len(DRAW) and not self.forfeit(slot, game, ply):
                return
            self.rematch(slot, game)
            return
        row, col = DRAW[ply]
        answer = Visitor(self.fleet.port, game.mover(ply)).post(
            f"/games/{game.id}/move/", {"row": row, "col": col, "ply": ply}
        )
        self.count("moves", answer)
        if answer.status == 302 and LOCATION_GAME.search(answer.location):
            self.moves.append((answer.sent, game.id))
            self.plies[slot] = ply + 1

    def forfeit(self, slot: int, game: Game, ply: int) -> bool:
        answer = Visitor(self.fleet.port, game.mover(ply)).post(
            f"/games/{game.id}/forfeit/"
        )
        self.count("forfeits", answer)
        if answer.status == 302 and LOCATION_GAME.search(answer.location):
            return True
        self.ends[slot] = len(DRAW)  # refused: played to the end instead
        return False

    def rematch(self, slot: int, game: Game) -> None:
        answer = Visitor(self.fleet.port, game.x).post(f"/games/{game.id}/rematch/")
        self.count("rematches", answer)
        found = LOCATION_GAME.search(answer.location)
        if answer.status != 302 or not found:
            return
        # Sides swapped: the finished game's o plays x.
        new = Game(int(found[1]), game.o, game.x, game.o_name, game.x_name)
        self.games[slot], self.plies[slot], self.ends[slot] = new, 0, len(DRAW)
        old, self.watching[slot] = self.watching[slot], []
        for stream in old:  # the page follows the rematch link: a new stream
            self.streams.loop.call_soon_threadsafe(stream.task.cancel)
            self.streams.streams.remove(stream)
            self.watching[slot].append(self.streams.open(new.events(), new.x))

    def reader(self) -> None:
        turn = iter(range(10**12))

        def read():
            game = self.games[next(turn) % len(self.games)]
            answer = Visitor(self.fleet.port, game.x).get(f"/games/{game.id}/")
            self.count("pages", answer)
            if answer.status == 200:
                self.pages.append((answer.sent, answer.seconds))

        self.paced(self.args.pages_per_second, read, workers=4)

    def signups(self) -> None:
        def sign_up():
            name = f"soaker{len(self.accounts)}x{time.monotonic_ns() % 10**6}"
            fields = {"username": name, "password1": PASSWORD, "password2": PASSWORD}
            answer = Visitor(self.fleet.port).post("/accounts/signup/", fields)
            self.count("sign-ups", answer)
            if answer.status == 302:
                self.accounts.append(name)

        self.paced(0.1, sign_up)

    def logins(self) -> None:
        def log_in():
            if not self.accounts:
                return
            name = self.accounts[int(time.monotonic()) % len(self.accounts)]
            fields = {"login": name, "password": PASSWORD}
            answer = Visitor(self.fleet.port).post("/accounts/login/", fields)
            self.count("logins", answer)

        self.paced(0.2, log_in)

    def event_delays(self, since: float, until: float) -> list[float]:
        """Seconds from each acknowledged move sent in [since, until) to each of
        its game's streams announcing something after it (EVENT_WAIT at most:
        a miss counts as EVENT_WAIT)."""
        by_path: dict[str, list] = {}
        for stream in list(self.streams.streams):
            by_path.setdefault(stream.path, []).append(stream)
        delays = []
        for sent, game_id in [m for m in self.moves if since <= m[0] < until]:
            for stream in by_path.get(f"/games/{game_id}/events/", []):
                seen = [at for _, at in stream.seen[:] if at > sent]
                delays.append(min(EVENT_WAIT, seen[0] - sent if seen else EVENT_WAIT))
        return delays

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)
        self.streams.close()


def processes(fleet: Fleet) -> dict[str, tuple[int, int]]:
    """name -> (RSS in kB, open files) of every process of the hosts (named by
    host, what it runs and its pid) and of nginx."""
    leaders = {host.process.pid: n for n, host in enumerate(fleet.hosts, 1)}
    nginx = fleet.nginx.process.pid
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            if int(fields[3]) in leaders:
                owner = f"host {leaders[int(fields[3])]}"
            elif nginx in (pid, int(fields[1])):
                owner = "nginx"
            else:
                continue
            status = (stat.parent / "status").read_text()
            rss = int(re.search(r"VmRSS:\s+(\d+)", status)[1])
            files = len(list((stat.parent / "fd").iterdir()))
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, TypeError):  # ended meanwhile; a kernel thread
            continue
        words = [w.decode() for w in command if w]
        module = next((w for w in words if w.startswith("tictactoe_site.")), None)
        # nginx names its processes "nginx: master process /usr/sbin/nginx ..."
        program = Path(words[0].split(":")[0].split()[0]).name if words else "?"
        role = module.rsplit(".", 1)[-1] if module else program
        found[f"{owner} {role} {pid}"] = (rss, files)
    return found


def sample(fleet: Fleet, play: Play, at: float, since: float, now: float) -> dict:
    values = {}
    for name, (rss, files) in processes(fleet).items():
        values[f"rss {name}"] = round(rss / 1024, 1)
        values[f"files {name}"] = files
    name = fleet.database_url.rsplit("/", 1)[1]
    ((values["connections"],),) = fleet.query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
    )
    for table, (source, _) in TABLES.items():
        ((values[f"rows {table}"],),) = fleet.query(f"SELECT count(*) FROM {source}")
    page_seconds = [s for sent, s in play.pages if since <= sent < now]
    events = play.event_delays(since - EVENT_WAIT, now - EVENT_WAIT)
    for label, series, fraction in (
        ("page p50 ms", page_seconds, 0.5),
        ("page p99 ms", page_seconds, 0.99),
        ("event p95 ms", events, 0.95),
    ):
        value = soak_verdict.percentile(series, fraction)
        values[label] = None if value is None else round(1000 * value, 1)
    values["moves"] = sum(1 for sent, _ in play.moves if since <= sent < now)
    values["streams open"] = sum(1 for s in play.streams.streams if s.open_on)
    return {"at": round(at, 1), "values": values}


def verdict(samples: list[dict], play: Play, started: float, seconds: float) -> dict:
    series = [(s["at"], s["values"]) for s in samples]
    windows = soak_verdict.Windows.for_run(seconds)
    names = sorted({n for _, values in series for n in values})
    checks = {}
    for name in names:
        if name.startswith("rss "):
            checks[name] = soak_verdict.growth(series, windows, name)
    # Open files per owner: streams move between a host's processes as they
    # reconnect, and their sockets with them.
    for owner, points in owner_sums(samples, "files").items():
        checks[f"files {owner}"] = soak_verdict.growth(
            [(at, {"files": total}) for at, total in points],
            windows,
            "files",
            SLACK["files"],
        )
    checks["connections"] = soak_verdict.growth(
        series, windows, "connections", SLACK["connections"]
    )
    for table, (_, kept) in TABLES.items():
        checks[f"rows {table}"] = soak_verdict.bounded(
            series, windows, f"rows {table}", kept, SLACK["table"]
        )
    pages = [(sent - started, s) for sent, s in play.pages]
    checks["page p99"] = soak_verdict.drift(pages, windows)
    # A 503 is the app's answer to overload (shown in the answers); any other
    # 5xx is a bug, and no answer a failure.
    failed = sum(
        number
        for counts in play.statuses.values()
        for status, number in counts.items()
        if status == 0 or (status in range(500, 600) and status != 503)
    )
    checks["answers 5xx but 503, or none"] = {"failed": failed, "ok": failed == 0}
    return {
        "windows": windows.__dict__,
        "checks": checks,
        "passed": soak_verdict.passed(checks),
    }


def two_host_fleet(stack: ExitStack, directory: Path, database_url: str) -> Fleet:
    """The fleet's harness with its first `HOSTS` hosts: nginx's upstream lists
    them only (the documented block's other `server` lines left out)."""
    redis = PrivateRedis()
    redis.start()
    stack.callback(redis.kill)
    env = {
        "WEB_ACCESS_LOG": "0",
        "DJANGO_SETTINGS_MODULE": "tests.bench.soak_settings",
        # Login counts kept a minute, not 15: housekeeping trims them in the run.
        "DJANGO_LOGIN_COOLOFF_MINUTES": "1",
    }
    fleet = Fleet(database_url, directory, redis, env)
    fleet.hosts = fleet.hosts[:HOSTS]
    upstreams = [h.upstream for h in fleet.hosts] + ["unused:1"] * (3 - HOSTS)
    fleet.nginx = Nginx(directory / "nginx", upstreams)
    config = fleet.nginx.config.read_text().splitlines()
    fleet.nginx.config.write_text(
        "\n".join(line for line in config if "unused:1" not in line) + "\n"
    )
    stack.callback(fleet.stop)
    fleet.start()
    return fleet


def players_games(fleet: Fleet, count: int) -> list[Game]:
    """The fleet's games, their players' sessions made with the project's
    settings: kept for weeks, not the soak's minute."""
    env = fleet.hosts[0].env
    settings = env.pop("DJANGO_SETTINGS_MODULE")
    try:
        return fleet.games("soak", count)
    finally:
        env["DJANGO_SETTINGS_MODULE"] = settings


def soak(args) -> dict:
    seconds = 60 * args.minutes
    every = 60.0 if args.minutes >= 10 else 15.0
    directory = Path(tempfile.mkdtemp(prefix="ttt-bench-soak-"))
    database_url = fresh_database()
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, directory, ignore_errors=True)
        stack.callback(drop_database, database_url)
        fleet = two_host_fleet(stack, directory, database_url)
        games = players_games(fleet, args.games)
        play = Play(fleet, games, args)
        play.open_streams()
        stack.callback(play.stop)
        started = time.monotonic()
        play.start()
        samples, since = [], started
        for n in range(int(seconds // every) + 1):
            play.stopping.wait(max(0.0, started + n * every - time.monotonic()))
            now = time.monotonic()
            samples.append(sample(fleet, play, now - started, since, now))
            since = now
            print(json.dumps(samples[-1]), flush=True)
        judged = verdict(samples, play, started, samples[-1]["at"])
        return {
            "samples": samples,
            "statuses": play.statuses,
            "failures": play.failures,
            **judged,
        }


def print_table(results: dict) -> None:
    """Per sample: memory and files summed over each owner, connections, rows,
    latencies; then each failed check."""
    samples = results["samples"]
    owners = sorted(
        {" ".join(n.split()[1:-2]) for n in samples[0]["values"] if n.startswith("rss")}
    )
    columns = [f"rss MB {o}" for o in owners] + [f"files {o}" for o in owners]
    columns += ["connections"] + [f"rows {t}" for t in TABLES]
    columns += ["page p50 ms", "page p99 ms", "event p95 ms", "moves", "streams open"]
    print(f"\nsoak  ({HOSTS} hosts behind nginx, PostgreSQL + Redis)")
    print("  s  " + " | ".join(columns))
    for entry in samples:
        values, row = entry["values"], []
        for column in columns:
            if column.startswith(("rss MB ", "files ")):
                kind, owner = (
                    ("rss", column[7:]) if "MB" in column else ("files", column[6:])
                )
                prefix = f"{kind} {owner} "
                row.append(
                    round(sum(v for n, v in values.items() if n.startswith(prefix)), 1)
                )
            else:
                row.append(values.get(column))
        print(f"{entry['at']:>5} " + " | ".join(str(v) for v in row))
    print(f"answers: {json.dumps(results['statuses'], sort_keys=True)}")
    for failure, body in results["failures"].items():
        print(f"  first {failure}: {body!r}")
    windows = results["windows"]
    print(f"warm-up {windows['warm_up']:.0f} s, windows of {windows['length']:.0f} s")
    for name, check in results["checks"].items():
        if check["ok"] is not True:
            print(
                f"  {'not judged' if check['ok'] is None else 'FAILED'}: {name} {check}"
            )
    print("verdict: " + ("nothing left behind" if results["passed"] else "FAILED"))


def main(argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--moves-per-second", type=float, default=20)
    parser.add_argument("--pages-per-second", type=float, default=5)
    args = parser.parse_args(argv)
    if args.minutes < 1:
        parser.error("a soak lasts at least a minute")
    results = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    results |= {"args": vars(args), **soak(args)}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    soak_plot.draw(results, PLOT)
    print_table(results)
    print(f"wrote {RESULTS.relative_to(ROOT)}, {PLOT.relative_to(ROOT)}")
    return results["passed"]


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
