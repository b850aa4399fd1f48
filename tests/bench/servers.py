"""`make bench-servers`: the same app, the same game page, under each server.

    python -m tests.bench.servers [--duration 10] [--rounds 3] [--database sqlite]
                                  [--only NAME,NAME]

Seeds the small scenario on the chosen database (SQLite, or PostgreSQL at
BENCH_POSTGRES_URL), then in each round loads the game page (wrk, as `make bench`
does) on every server in turn, two processes each, access logs off, and prints
requests/s and server CPU per request, each as the median of its per-round ratio
to gunicorn's sync workers. The rounds interleave, so each ratio compares runs
made under the same machine load.

  gunicorn sync      gunicorn, 2 sync workers (Django's WSGI handler, no adapter)
  make serve         tictactoe_site.server.serve as `make serve` runs it (uvicorn and
                     the bridge: GET pages on the event loop with SQLite, in page
                     threads with PostgreSQL; each process on a CPU of its own)
  serve unpinned     the same with WEB_PIN_CPUS=0 (tictactoe_site.server.cpus)
  serve threads      the same with every page in a page thread
                     (WEB_READS_ON_LOOP=0, as PostgreSQL runs them)
  serve no metrics   the same with METRICS_ENABLED=0 (tictactoe_site.ops.metrics)
  granian wsgi       granian's WSGI interface, 2 workers
  a2wsgi uvicorn     uvicorn + a2wsgi.WSGIMiddleware, 2 workers
"""

import argparse
import json
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.run import (
    BIN,
    PORT,
    POSTGRES_URL,
    ROOT,
    PostgreSQL,
    Server,
    SQLite,
    Target,
    django_env,
    floor_server_command,
    log_in,
    run_wrk,
    seed,
)


def servers(port: int) -> dict[str, tuple[list[str], dict]]:
    bind = ["--host", "127.0.0.1", "--port", str(port)]
    serve = [sys.executable, "-m", "tictactoe_site.server.serve"]
    serve_env = {"WEB_CONCURRENCY": "2", "HOST": "127.0.0.1", "PORT": str(port)}
    return {
        "gunicorn sync": (floor_server_command(port), {}),
        "make serve": (serve, serve_env),
        "serve unpinned": (serve, serve_env | {"WEB_PIN_CPUS": "0"}),
        "serve threads": (serve, serve_env | {"WEB_READS_ON_LOOP": "0"}),
        "serve no metrics": (serve, serve_env | {"METRICS_ENABLED": "0"}),
        "granian wsgi": (
            [
                str(BIN / "granian"),
                "--interface=wsgi",
                "--workers=2",
                "--no-access-log",
                *bind,
                "tictactoe_site.wsgi:application",
            ],
            {},
        ),
        "a2wsgi uvicorn": (
            [
                str(BIN / "uvicorn"),
                "--workers=2",
                "--no-access-log",
                "--lifespan=off",
                *bind,
                "tests.bench.a2wsgi_app:application",
            ],
            {},
        ),
    }


BASELINE = "gunicorn sync"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated server names (and baseline)")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="ttt-servers-"))
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=django_env("sqlite://:memory:"),
        check=True,
    )
    if args.database == "postgres":
        database = PostgreSQL(POSTGRES_URL)
        if not database.reachable():
            raise SystemExit(f"PostgreSQL at {POSTGRES_URL} does not answer")
    else:
        database = SQLite(workdir)
    password = secrets.token_urlsafe(16)
    url, manifest = seed(database, "small", workdir, password)
    port = PORT + 10
    chosen = servers(port)
    if args.only:
        wanted = {BASELINE, *args.only.split(",")}
        chosen = {name: spec for name, spec in chosen.items() if name in wanted}
    results: dict[str, list[dict]] = {name: [] for name in chosen}
    path = f"/games/{manifest['page_game']}/"
    try:
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}/{args.rounds}:", end="", flush=True)
            for name, (command, extra) in chosen.items():
                server = Server(
                    name,
                    command,
                    django_env(url) | extra,
                    port,
                    workdir / f"{name.replace(' ', '-')}.log",
                )
                server.start()
                try:
                    session = log_in(server.base_url, manifest["viewer"], password, "/")
                    target = Target("game page", name, server, session, path)
                    run_wrk(target, 0, 2, workdir)  # warm up both workers
                    result = run_wrk(target, 0, args.duration, workdir)
                finally:
                    server.stop()
                results[name].append(result)
                print(f" {name} {result['rps']:.0f}/s", end=";", flush=True)
            print(flush=True)
    finally:
        database.drop("small")
    print_table(results, database.name)
    shutil.rmtree(workdir)


def print_table(results: dict[str, list[dict]], database: str) -> None:
    def median_ratio(name: str, metric: str) -> float:
        pairs = zip(results[name], results[BASELINE], strict=True)
        return statistics.median(a[metric] / b[metric] for a, b in pairs)

    print(f"\ngame page on {database}, 2 processes per server; ratios to {BASELINE}")
    header = f"{'server':<18} {'req/s':>6} {'ratio':>6} {'cpu ms':>7} {'cpu ratio':>9}"
    print(header)
    print("-" * len(header))
    rows = {}
    for name, runs in results.items():
        rows[name] = {
            "rps": statistics.median(r["rps"] for r in runs),
            "cpu_ms": statistics.median(r["cpu_ms_per_request"] for r in runs),
            "rps_ratio": median_ratio(name, "rps"),
            "cpu_ratio": median_ratio(name, "cpu_ms_per_request"),
        }
        row = rows[name]
        print(
            f"{name:<18} {row['rps']:>6.0f} {row['rps_ratio']:>5.2f}x "
            f"{row['cpu_ms']:>7.2f} {row['cpu_ratio']:>8.2f}x"
        )
    Path("bench-servers.json").write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "database": database,
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
