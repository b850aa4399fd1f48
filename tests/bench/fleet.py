"""The fleet bench: three `make serve` hosts behind nginx running the nginx block
of docs/deploying.md, on one PostgreSQL database and one Redis, on this machine (the
harness of the fleet tests, tests/support/fleet.py).

    python -m tests.bench.fleet [--streams 2000] [--moves 60] [--duration 10]

Figures (printed, and written to artifacts/fleet-results.json):
  pages   the game page under wrk (1 thread, 4 connections), through nginx to
          the three hosts, through nginx to one of them (the others marked
          down), and straight to one host started beside them with as many
          server processes as the three together, two rounds of each in turn:
          requests a second and CPU milliseconds per page (every process of
          the hosts measured, and nginx's), and of that the hosts' CPU when
          idle (their task workers, heartbeats, listeners).
  events  `--streams` live streams per host through nginx (3 x 2,000 by
          default), then `--moves` moves through nginx, one at a time: the
          delay from before each move's POST until each of its game's streams
          announced it, p50/p95/max over every (move, stream), and how many
          streams missed a move.
  kill    `kill -9` of one whole host with every stream open: seconds until
          every stream is open on a live host, and until every stream shows its
          game's version as it was at the kill.

Needs nginx, redis-server, wrk and PostgreSQL at BENCH_POSTGRES_URL (default
postgres://postgres@127.0.0.1:5432/postgres); it makes a database of its own.
"""

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

import psycopg

from tests.support.fleet import (
    NGINX,
    SITE,
    FleetHost,
    move_seen,
    running_fleet,
    until,
)
from tests.support.served import ROOT

RESULTS = ROOT / "artifacts" / "fleet-results.json"  # artifacts/: not committed
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
STREAMS_PER_GAME = 30
OPENING_AT_ONCE = 200  # stream handshakes in flight while opening them
ONE_HOST = "127.0.0.5"  # the one-host comparison's address, beside the fleet's
PAGE_ROUNDS = 2  # of each of the page's targets, in turn


def cpu_seconds(session_ids: Collection[int] = (), parent: int = 0) -> float:
    """utime + stime, from /proc, of every process in one of `session_ids` (a
    host is one session: make and all it started), or of `parent` and its
    children (nginx and its workers)."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if int(fields[3]) in session_ids or parent in (pid, int(fields[1])):
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def wrk(url: str, session: str, duration: int) -> tuple[int, float]:
    """Requests answered and requests a second: wrk fails on any non-2xx."""
    output = subprocess.run(
        ["wrk", "-t1", "-c4", f"-d{duration}s", "--timeout", "10s"]
        + ["-H", f"Host: {SITE}", "-H", f"Cookie: sessionid={session}", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in output or "Socket errors" in output:
        raise SystemExit(f"wrk saw failures:\n{output}")
    requests = int(re.search(r"(\d+) requests in", output)[1])
    return requests, float(re.search(r"Requests/sec:\s+([\d.]+)", output)[1])


def one_host_like(fleet, directory: Path) -> FleetHost:
    """One host with as many server processes as the whole fleet, on the same
    database and Redis, beside it: the same work on one machine's processes."""
    processes = sum(int(host.env["WEB_CONCURRENCY"]) for host in fleet.hosts)
    host = FleetHost(
        address=ONE_HOST,
        port=fleet.hosts[0].port,
        directory=directory / "one-host",
        database_url=fleet.database_url,
        workers=processes,
    )
    for name in ("REDIS_URL", "WEB_ACCESS_LOG"):
        host.env[name] = fleet.hosts[0].env[name]
    return host


def bench_pages(fleet, game, duration: int, directory: Path) -> dict:
    """The game page through nginx to the three hosts; through nginx to the
    first host alone (the others marked down); and straight to one host with as
    many server processes as the three have together: in alternating rounds
    after a warm-up, CPU of every process of the hosts measured (the idle ones
    included) and of nginx, per page; and the hosts' CPU while idle for as long,
    per page of the load (what idle processes add)."""
    page = f"/games/{game.id}/"
    alone = one_host_like(fleet, directory)
    alone.start()
    fleet_hosts = {host.process.pid for host in fleet.hosts}
    others = [host.upstream for host in fleet.hosts[1:]]
    through_nginx = f"http://127.0.0.1:{fleet.port}{page}"
    targets = {  # name: (url, hosts measured, the hosts nginx leaves out)
        "through nginx, 3 hosts": (through_nginx, fleet_hosts, None),
        "through nginx, 1 host": (through_nginx, fleet_hosts, others),
        f"one host, {alone.env['WEB_CONCURRENCY']} processes": (
            f"http://{alone.address}:{alone.port}{page}",
            {alone.process.pid},
            None,
        ),
    }
    nginx = fleet.nginx.process.pid
    totals = {name: [0, 0.0, 0.0, 0.0] for name in targets}  # pages, s, cpu, nginx
    try:
        for url, _, _ in targets.values():
            wrk(url, game.x, 2)  # every process renders its first pages
        idle = {}  # CPU seconds a second of each set of hosts measured
        for _, hosts, _ in targets.values():
            if frozenset(hosts) not in idle:
                before = cpu_seconds(hosts)
                time.sleep(duration / 2)  # measuring idle CPU: nothing to wait for
                idle[frozenset(hosts)] = (cpu_seconds(hosts) - before) / (duration / 2)
        for _ in range(PAGE_ROUNDS):
            for name, (url, hosts, down) in targets.items():
                if down:
                    fleet.nginx.reload(down=down)
                before = cpu_seconds(hosts), cpu_seconds(parent=nginx)
                requests, rate = wrk(url, game.x, duration)
                after = cpu_seconds(hosts), cpu_seconds(parent=nginx)
                if down:
                    fleet.nginx.reload()
                total = totals[name]
                total[0] += requests
                total[1] += requests / rate
                total[2] += after[0] - before[0]
                total[3] += after[1] - before[1]
    finally:
        alone.stop()
    return {
        name: {
            "rps": round(pages / seconds),
            "hosts_cpu_ms_per_page": round(1000 * cpu / pages, 2),
            "idle_cpu_ms_per_page": round(
                1000 * idle[frozenset(targets[name][1])] * seconds / pages, 2
            ),
            "nginx_cpu_ms_per_page": round(1000 * nginx_cpu / pages, 2),
        }
        for name, (pages, seconds, cpu, nginx_cpu) in totals.items()
    }


def open_streams(fleet, games, per_host: int):
    streams = fleet.streams()
    wanted = per_host * len(fleet.hosts)
    for start in range(0, wanted, OPENING_AT_ONCE):
        batch = []
        for n in range(start, min(wanted, start + OPENING_AT_ONCE)):
            game = games[n // STREAMS_PER_GAME]
            batch.append(streams.open(game.events(), game.x))
        if until(lambda b=batch: all(s.open_on for s in b), 60) is None:
            raise SystemExit("streams did not open within 60 s")
    per_host_open = {}
    for stream in streams.streams:
        per_host_open[stream.open_on] = per_host_open.get(stream.open_on, 0) + 1
    return streams, per_host_open


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def bench_events(fleet, games, streams, moves: int) -> dict:
    delays, missed = [], 0
    plies = {game.id: 0 for game in games}
    for n in range(moves):
        game = games[n % len(games)]
        ply = plies[game.id]
        plies[game.id] = ply + 1
        watching = [s for s in streams.streams if s.path == game.events()]
        answer, seen = move_seen(fleet, game, ply, watching, 10)
        if answer.status != 302:
            raise SystemExit(f"a move answered {answer}")
        missed += seen.count(None)
        delays += [1000 * delay for delay in seen if delay is not None]
    return {
        "samples": len(delays),
        "missed": missed,
        "p50_ms": round(percentile(delays, 0.5), 1),
        "p95_ms": round(percentile(delays, 0.95), 1),
        "max_ms": round(max(delays), 1),
    }


def bench_kill(fleet, games, streams) -> dict:
    victim = fleet.hosts[1]
    killed_at = time.monotonic()
    victim.kill()
    versions = fleet.versions(games)
    by_path = {game.events(): versions[game.id] for game in games}
    live = until(
        lambda: all(s.open_on not in (None, victim.upstream) for s in streams.streams),
        120,
    )
    caught = until(
        lambda: all(
            (s.last_id or 0) >= by_path[s.path] and s.open_on for s in streams.streams
        ),
        120,
    )
    return {
        "streams_moved": sum(1 for s in streams.streams if len(s.connections) > 1),
        "all_on_live_hosts_s": live and round(live - killed_at, 2),
        "all_caught_up_s": caught and round(caught - killed_at, 2),
    }


def fresh_database() -> str:
    name = f"bench_fleet_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return POSTGRES_URL.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=2000, help="per host")
    parser.add_argument("--moves", type=int, default=60)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk")
    args = parser.parse_args(argv)
    for tool in ("wrk", "redis-server"):
        if not shutil.which(tool):
            raise SystemExit(f"the fleet bench needs {tool}")
    if not Path(NGINX).exists():
        raise SystemExit("the fleet bench needs nginx: apt-get install nginx-light")
    games_needed = -(-args.streams * 3 // STREAMS_PER_GAME)  # rounded up
    directory = Path(tempfile.mkdtemp(prefix="ttt-bench-fleet-"))
    database_url = fresh_database()
    results = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        with running_fleet(
            directory,
            "bench",
            redis=True,
            database_url=database_url,
            env={"WEB_ACCESS_LOG": "0"},
        ) as fleet:
            games = fleet.games("bench", games_needed)
            results["pages"] = bench_pages(fleet, games[0], args.duration, directory)
            print(json.dumps({"pages": results["pages"]}), flush=True)
            streams, per_host = open_streams(fleet, games, args.streams)
            results["streams_per_host"] = per_host
            results["events"] = bench_events(fleet, games, streams, args.moves)
            print(json.dumps({"events": results["events"]}), flush=True)
            results["kill"] = bench_kill(fleet, games, streams)
            print(json.dumps({"kill": results["kill"]}), flush=True)
            streams.close()
    finally:
        drop_database(database_url)
        shutil.rmtree(directory, ignore_errors=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print_table(results, args.streams)
    print(f"wrote {RESULTS.relative_to(ROOT)}")


def print_table(results: dict, streams: int) -> None:
    """The section as docs/benchmarks.md shows it."""
    print("\nfleet  (3 hosts behind nginx, PostgreSQL + Redis)")
    print(
        f"{'game page':<24}{'req/s':>7}{'host cpu ms':>13}{'of it idle':>12}"
        f"{'nginx cpu ms':>14}"
    )
    print("-" * 70)
    for name, figures in results["pages"].items():
        nginx = figures["nginx_cpu_ms_per_page"] if "nginx" in name else "-"
        print(
            f"{name:<24}{figures['rps']:>7}{figures['hosts_cpu_ms_per_page']:>13}"
            f"{figures['idle_cpu_ms_per_page']:>12}{nginx:>14}"
        )
    fleet_page, _, one_host = results["pages"].values()

    def busy(figures: dict) -> float:
        return figures["hosts_cpu_ms_per_page"] - figures["idle_cpu_ms_per_page"]

    whole = fleet_page["hosts_cpu_ms_per_page"] / one_host["hosts_cpu_ms_per_page"]
    print(
        f"host CPU per page, through the fleet / on one host: {whole:.2f}x, "
        f"idle CPU left out: {busy(fleet_page) / busy(one_host):.2f}x"
    )
    events, kill = results["events"], results["kill"]
    print(
        f"events, 3 x {streams} streams: {events['samples']} samples, "
        f"{events['missed']} missed, p50 {events['p50_ms']} ms, "
        f"p95 {events['p95_ms']} ms, max {events['max_ms']} ms"
    )
    print(
        f"kill -9 of one host: {kill['streams_moved']} streams moved, every stream "
        f"on a live host in {kill['all_on_live_hosts_s']} s, caught up in "
        f"{kill['all_caught_up_s']} s"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
