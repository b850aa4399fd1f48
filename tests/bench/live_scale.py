"""Live updates at scale: thousands of open streams on the app as `make serve`
runs it, on a fresh database, measured from one client process.

    python -m tests.bench.live_scale [--streams 10000] [--games 5000]
        [--movers 25] [--duration 30] [--databases sqlite,postgres]
        [--phases open,moves,restart,fanout] [--broker notify|redis]

or `make bench BENCH_ARGS="--live-scale --streams 2000 --games 1000"`.

Phases (each prints its figures; all go to live-scale-results.json):
  open     open the streams (2 per game: one as a player, one as a spectator);
           server RSS per process before and after (KB per idle stream) and
           idle server CPU with every stream open (pings only).
  moves    `--movers` players move at once for `--duration` s, each on the next
           game of a shared queue, back to back (or `--think` s apart). Every
           stream of a moved game must get that version exactly once: missed /
           superseded / duplicated counts; event latency and "screen shows it"
           latency (event + fetch of the game's live partial), both timed from
           BEFORE the move's POST is sent.
  restart  restart the server with every stream open, as an operator would
           (SIGTERM, wait, start); streams reconnect by themselves as a
           browser's EventSource does (after the stream's `retry:`). Right
           after the restart the movers make one move each. Reports shutdown
           time, time until every stream reconnected and caught up, reconnect
           arrival spread (peak per 100 ms) and page p95 during the wave.
  fanout   (PostgreSQL) 4 single-process servers on 4 ports, as if 4 hosts;
           streams spread over them, moves made through any at stepped rates:
           the highest rate delivered to every watcher with p95 < 300 ms.
           `--broker redis` passes REDIS_URL to the servers.

The app's server comes from tests/bench/run.py (`app_server`), as in `make
bench`. Only the standard library on the client side: asyncio sockets, one
process; it raises its own open-files limit (servers started from it inherit
it) and spreads its connections over several loopback source addresses so
that 10,000 streams and their reconnects do not run out of local ports.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import resource
import secrets
import signal
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.live_latency import percentiles
from tests.bench.run import (
    POSTGRES_URL,
    ROOT,
    PostgreSQL,
    Server,
    SQLite,
    app_server,
    django_env,
    manage,
    run_seed,
)

HOST = "127.0.0.1"
SOURCES = [f"127.0.0.{n}" for n in range(1, 17)]
RESULTS = ROOT / "live-scale-results.json"
DRAW_ORDER = (0, 1, 2, 4, 3, 5, 7, 6, 8)  # a draw: every ply is legal
PLIES_PER_GAME = 8  # stop before the last ply: ending a game is not a move's cost
TARGET_MS = 300
OPENING_AT_ONCE = 200  # handshakes in flight while opening the streams
PAGES_PER_SECOND = 20  # game pages asked for during a restart's reconnect wave
NON_200_BACKOFF = (1.0, 30.0)  # static/games/live.js: 1 s, doubling, capped
SESSIONS_SCRIPT = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore

keys = {}
for username, count in WANTED:
    user = get_user_model().objects.get(username=username)
    keys[username] = []
    for _ in range(count):
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        keys[username].append(session.session_key)
print(json.dumps(keys))
"""


def now() -> float:
    return time.perf_counter()


def raise_open_files_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ----------------------------------------------------------- server processes


def server_pids(server: Server) -> list[int]:
    """The processes that serve: the master's worker children (spawned by
    multiprocessing; not its resource tracker), or the master alone."""
    workers = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == server.process.pid and b"spawn_main" in command:
            workers.append(int(stat.parent.name))
    return sorted(workers) or [server.process.pid]


LOG_SIGNS = {
    "live_update_not_delivered": "live update not delivered",
    "asgi_exceptions": "Exception in ASGI application",
    "tracebacks": "Traceback (most recent call last)",
}


def log_counts(logs: list[Path]) -> dict[str, int]:
    """What the servers' logs say went wrong (counts of known lines)."""
    text = "".join(path.read_text(errors="replace") for path in logs if path.exists())
    return {name: text.count(sign) for name, sign in LOG_SIGNS.items()}


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def make_server(label, port, database_url, workdir, *, workers=None, extra=None):
    command, env = app_server(port)
    env = django_env(database_url) | env | (extra or {})
    if workers is not None:
        env["WEB_CONCURRENCY"] = str(workers)
    return Server(label, command, env, port, workdir / f"{label}-{port}.log")


# ------------------------------------------------------------------- database


def prepare_database(database, name: str, games: int, workdir: Path, sessions):
    """A fresh database with `games` self-play games of the mover, and logged-in
    sessions: {"bench": [...], "bench-mover": [...]}."""
    started = now()
    url = database.create(name)
    manage(url, "migrate", "--noinput")
    manifest = workdir / f"{database.name}-{name}.json"
    password = secrets.token_urlsafe(16)
    seeded = run_seed(url, "small", password, games, manifest)
    script = SESSIONS_SCRIPT.replace("WANTED", repr(sessions))
    output = manage(url, "shell", "-c", script)
    keys = json.loads(output.strip().splitlines()[-1])
    print(
        f"  {database.name}: {len(seeded['move_games'])} games seeded, "
        f"{sum(len(v) for v in keys.values())} sessions, in {now() - started:.0f} s",
        flush=True,
    )
    return url, seeded["move_games"], keys


# --------------------------------------------------------------- HTTP client


class Client:
    """One-shot HTTP/1.1 requests (Connection: close), spread over sources."""

    def __init__(self) -> None:
        self._source = 0
        self.csrf = "".join(random.choices(string.ascii_letters + string.digits, k=32))

    def source(self) -> str:
        self._source = (self._source + 1) % len(SOURCES)
        return SOURCES[self._source]

    async def request(self, port, method, path, session, body=b"") -> int:
        reader, writer = await asyncio.open_connection(
            HOST, port, local_addr=(self.source(), 0)
        )
        try:
            cookies = f"sessionid={session}; csrftoken={self.csrf}"
            head = [
                f"{method} {path} HTTP/1.1",
                f"Host: {HOST}:{port}",
                "Connection: close",
                f"Cookie: {cookies}",
            ]
            if body:
                head += [
                    "Content-Type: application/x-www-form-urlencoded",
                    f"Content-Length: {len(body)}",
                ]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            status_line = await reader.readline()
            await reader.read()  # the rest, until the server closes
            return int(status_line.split()[1])
        finally:
            writer.close()

    async def move(self, port, session, game_id: int, ply: int) -> int:
        cell = DRAW_ORDER[ply]
        body = (
            f"csrfmiddlewaretoken={self.csrf}&row={cell // 3}&col={cell % 3}&ply={ply}"
        ).encode()
        return await self.request(
            port, "POST", f"/games/{game_id}/move/", session, body
        )


class Stream(asyncio.Protocol):
    """One EventSource: reconnects after the stream's `retry:` with the last
    event id, as browsers do; after a refusal (non-200) backs off like
    static/games/live.js."""

    def __init__(self, bench: "Bench", game_id: int, session: str, port: int):
        self.bench = bench
        self.game_id = game_id
        self.session = session
        self.port = port
        self.source = bench.client.source()
        self.first_version = bench.versions[game_id]
        self.last_id: int | None = None
        self.retry = 2.0
        self.backoff = NON_200_BACKOFF[0]
        self.received: dict[int, float] = {}
        self.duplicates = 0
        self.refusals = 0
        self.attempts: list[float] = []
        self.opens: list[float] = []
        self.transport = None
        self.closed: asyncio.Future | None = None
        self.opened: asyncio.Future | None = None

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.buffer = b""
        self.in_head = True
        self.status = 0
        extra = f"Last-Event-ID: {self.last_id}\r\n" if self.last_id else ""
        transport.write(
            (
                f"GET /games/{self.game_id}/events/?v={self.first_version} HTTP/1.1\r\n"
                f"Host: {HOST}:{self.port}\r\nAccept: text/event-stream\r\n"
                f"Cookie: sessionid={self.session}\r\n{extra}\r\n"
            ).encode()
        )

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.in_head:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            self.status = int(self.buffer.split(b" ", 2)[1])
            self.buffer = self.buffer[end + 4 :]
            self.in_head = False
            if self.status != 200:
                self.refusals += 1
                self.transport.close()
                return
            self.opens.append(now())
            self.backoff = NON_200_BACKOFF[0]
            if not self.opened.done():
                self.opened.set_result(True)
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"id: "):
                self._event(int(line[4:]))
            elif line.startswith(b"retry: "):
                self.retry = int(line[7:]) / 1000

    def connection_lost(self, exc) -> None:
        if not self.opened.done():
            self.opened.set_result(False)
        if not self.closed.done():
            self.closed.set_result(None)

    def _event(self, version: int) -> None:
        arrived = now()
        self.last_id = version
        if version in self.received:
            self.duplicates += 1
            return
        self.received[version] = arrived
        self.bench.on_event(self, version, arrived)

    # the EventSource loop
    async def run(self, opening: asyncio.Semaphore | None) -> None:
        loop = asyncio.get_running_loop()
        while not self.bench.stopping:
            self.closed = loop.create_future()
            self.opened = loop.create_future()
            self.attempts.append(now())
            try:
                if opening is not None:
                    async with opening:
                        await loop.create_connection(
                            lambda: self, HOST, self.port, local_addr=(self.source, 0)
                        )
                        await self.opened
                    opening = None  # reconnects are not throttled: browsers are not
                else:
                    await loop.create_connection(
                        lambda: self, HOST, self.port, local_addr=(self.source, 0)
                    )
            except OSError:
                await asyncio.sleep(self.retry)
                continue
            await self.closed
            if self.bench.stopping:
                return
            if self.status not in (0, 200):
                await asyncio.sleep(self.backoff)
                self.backoff = min(self.backoff * 2, NON_200_BACKOFF[1])
            else:
                await asyncio.sleep(self.retry)

    def is_open(self) -> bool:
        return (
            self.transport is not None
            and not self.transport.is_closing()
            and self.status == 200
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


# ----------------------------------------------------------------- the bench


class Bench:
    def __init__(self, args, game_ids: list[int], keys: dict, ports: list[int]):
        self.args = args
        self.client = Client()
        self.ports = ports
        self.game_ids = game_ids
        self.viewer_keys = keys["bench"]
        self.mover_keys = keys["bench-mover"]
        self.versions = dict.fromkeys(game_ids, 1)
        self.plies = dict.fromkeys(game_ids, 0)
        self.queue = collections.deque(
            random.Random(13).sample(game_ids, len(game_ids))
        )
        self.posted: dict[tuple[int, int], float] = {}
        self.shown_ms: list[float] = []
        self.fetch_errors = 0
        self.fetches: set[asyncio.Task] = set()
        self.streams: list[Stream] = []
        self.by_game: dict[int, list[Stream]] = collections.defaultdict(list)
        self.tasks: list[asyncio.Task] = []
        self.stopping = False

    # streams ---------------------------------------------------------------
    async def open_streams(self, count: int) -> float:
        opening = asyncio.Semaphore(OPENING_AT_ONCE)
        started = now()
        for index in range(count):
            game_id = self.game_ids[index % len(self.game_ids)]
            # The first stream of a game is its player's page, the next ones
            # spectators'.
            player = index < len(self.game_ids)
            keys = self.mover_keys if player else self.viewer_keys
            # A game's streams sit on different servers when there are several.
            port = self.ports[(index + index // len(self.game_ids)) % len(self.ports)]
            stream = Stream(self, game_id, keys[index % len(keys)], port)
            self.streams.append(stream)
            self.by_game[game_id].append(stream)
            self.tasks.append(asyncio.create_task(stream.run(opening)))
        await self.wait_until(
            lambda: all(s.opens for s in self.streams), 600, "every stream to open"
        )
        return now() - started

    def open_count(self) -> int:
        return sum(1 for s in self.streams if s.is_open())

    async def wait_until(self, condition, timeout: float, what: str) -> bool:
        deadline = now() + timeout
        while now() < deadline:
            if condition():
                return True
            await asyncio.sleep(0.05)  # polling a condition under a deadline
        print(f"    (gave up after {timeout:.0f} s waiting for {what})", flush=True)
        return False

    def on_event(self, stream: Stream, version: int, arrived: float) -> None:
        started = self.posted.get((stream.game_id, version))
        if started is None:
            return
        task = asyncio.create_task(self._show(stream, started))
        self.fetches.add(task)
        task.add_done_callback(self.fetches.discard)

    async def _show(self, stream: Stream, started: float) -> None:
        """What the page's script does on an event: fetch the live partial."""
        try:
            status = await self.client.request(
                stream.port, "GET", f"/games/{stream.game_id}/live/", stream.session
            )
        except OSError:
            status = 0
        if status == 200:
            self.shown_ms.append((now() - started) * 1000)
        else:
            self.fetch_errors += 1

    # moves -----------------------------------------------------------------
    async def make_move(self, session: str, port: int) -> tuple[int, float] | None:
        """The next game of the queue gets its next move; None when none left."""
        if not self.queue:
            return None
        game_id = self.queue.popleft()
        ply = self.plies[game_id]
        version = self.versions[game_id] + 1
        started = now()  # before the POST is sent: the event may come first
        self.posted[(game_id, version)] = started
        try:
            status = await self.client.move(port, session, game_id, ply)
        except OSError:
            status = 0
        took = (now() - started) * 1000
        if status == 302:
            self.versions[game_id] = version
            self.plies[game_id] = ply + 1
            if ply + 1 < PLIES_PER_GAME:
                self.queue.append(game_id)
        else:
            del self.posted[(game_id, version)]
        return status, took

    async def movers(self, seconds: float, count: int) -> dict:
        statuses = collections.Counter()
        post_ms = []
        end = now() + seconds

        async def one(index: int):
            session = self.mover_keys[index % len(self.mover_keys)]
            while now() < end:
                port = self.ports[random.randrange(len(self.ports))]
                result = await self.make_move(session, port)
                if result is None:
                    return
                statuses[result[0]] += 1
                post_ms.append(result[1])
                if self.args.think:
                    await asyncio.sleep(self.args.think)  # a person, thinking

        await asyncio.gather(*(one(i) for i in range(count)))
        return {"statuses": dict(statuses), "post": percentiles(post_ms)}

    def deliveries(self, moves: list[tuple[int, int]]) -> dict:
        """Every stream of each moved game, for each move: got it exactly once?"""
        event_ms, missed, superseded, expected = [], 0, 0, 0
        for game_id, version in moves:
            started = self.posted[(game_id, version)]
            for stream in self.by_game[game_id]:
                expected += 1
                arrived = stream.received.get(version)
                if arrived is not None:
                    event_ms.append((arrived - started) * 1000)
                elif any(v > version for v in stream.received):
                    superseded += 1
                else:
                    missed += 1
        return {
            "expected": expected,
            "missed": missed,
            "superseded": superseded,
            "event": percentiles(event_ms),
        }

    async def settle(self, moves, timeout: float = 15) -> None:
        """Wait (bounded) for the events of `moves` and their partial fetches."""

        def arrived():
            return not self.fetches and all(
                max(s.received, default=0) >= v
                for g, v in moves
                for s in self.by_game[g]
            )

        await self.wait_until(arrived, timeout, "the last events")

    async def stop(self) -> None:
        self.stopping = True
        for stream in self.streams:
            stream.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


# ------------------------------------------------------------------- phases


def duplicates(bench: Bench) -> int:
    return sum(s.duplicates for s in bench.streams)


async def phase_open(bench: Bench, server: Server, args) -> dict:
    pids = server_pids(server)
    # Warm the workers (imports, templates, pools) before the baseline.
    for game_id in bench.game_ids[:20]:
        await bench.client.request(
            server.port, "GET", f"/games/{game_id}/", bench.viewer_keys[0]
        )
    before = {pid: rss_kb(pid) for pid in pids}
    took = await bench.open_streams(args.streams)
    await asyncio.sleep(2)  # let the servers finish the opening work
    after = {pid: rss_kb(pid) for pid in pids}
    cpu_start, wall_start = cpu_seconds(pids), now()
    await asyncio.sleep(args.idle)  # idle: measuring, not synchronising
    cpu = cpu_seconds(pids) - cpu_start
    wall = now() - wall_start
    pings = args.streams * wall / 15
    result = {
        "streams": args.streams,
        "open": bench.open_count(),
        "opened_in_s": round(took, 1),
        "refusals": sum(s.refusals for s in bench.streams),
        "rss_kb_before": before,
        "rss_kb_after": after,
        "kb_per_stream": round(
            (sum(after.values()) - sum(before.values())) / args.streams, 1
        ),
        "idle_cpu_percent_of_a_core": round(100 * cpu / wall, 2),
        "idle_cpu_us_per_ping": round(1e6 * cpu / pings, 1) if pings else None,
    }
    print(
        f"  open: {result['open']}/{args.streams} streams in {took:.1f} s; RSS per "
        f"process {list(before.values())} -> {list(after.values())} KB = "
        f"{result['kb_per_stream']} KB/stream (target <= 20); idle CPU "
        f"{result['idle_cpu_percent_of_a_core']} % of a core over {wall:.0f} s "
        f"(~{result['idle_cpu_us_per_ping']} us per ping)",
        flush=True,
    )
    return result


async def phase_moves(bench: Bench, args) -> dict:
    first = set(bench.posted)
    dup_before = duplicates(bench)
    shown_before = len(bench.shown_ms)
    played = await bench.movers(args.duration, args.movers)
    moves = [key for key in bench.posted if key not in first]
    await bench.settle(moves)
    result = played | bench.deliveries(moves)
    result["moves"] = len(moves)
    result["moves_per_s"] = round(len(moves) / args.duration, 1)
    result["duplicated"] = duplicates(bench) - dup_before
    result["shown"] = percentiles(bench.shown_ms[shown_before:])
    result["fetch_errors"] = bench.fetch_errors
    event, shown = result["event"], result["shown"]
    print(
        f"  moves: {len(moves)} by {args.movers} movers in {args.duration} s "
        f"({result['moves_per_s']}/s), POST p95 {result['post'].get('p95_ms')} ms; "
        f"{result['expected']} deliveries: missed {result['missed']}, superseded "
        f"{result['superseded']}, duplicated {result['duplicated']}; event p50 "
        f"{event.get('p50_ms')} p95 {event.get('p95_ms')} ms; shown p95 "
        f"{shown.get('p95_ms')} ms (target < {TARGET_MS})",
        flush=True,
    )
    return result


async def phase_restart(bench: Bench, server: Server, args, workdir: Path) -> dict:
    pages = []  # (started, ms, status) of page requests during the wave
    refused_pages = 0
    probing = True

    async def page(game_id: int) -> None:
        nonlocal refused_pages
        started = now()
        try:
            status = await bench.client.request(
                server.port, "GET", f"/games/{game_id}/", bench.viewer_keys[0]
            )
        except OSError:
            refused_pages += 1
            return
        pages.append((started, (now() - started) * 1000, status))

    async def probe() -> None:
        """PAGES_PER_SECOND game pages, each sent on time whether or not the
        earlier ones were answered (as visitors' would be): a slow page holds up
        none of the next ones, so it cannot hide how slow they all were."""
        tasks = set()
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while probing:
            task = asyncio.create_task(page(random.choice(bench.game_ids)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_at += 1 / PAGES_PER_SECOND
            await asyncio.sleep(max(0.0, next_at - loop.time()))  # the pace
        await asyncio.gather(*tasks)

    dup_before = duplicates(bench)
    opens_before = [len(s.opens) for s in bench.streams]
    stopped_at = now()
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, server.stop)
    down_at = now()
    restarted = make_server(
        server.label + "-restarted", server.port, server.env["DATABASE_URL"], workdir
    )
    await loop.run_in_executor(None, restarted.start)
    up_at = now()
    pids = server_pids(restarted)
    cpu_at_up = cpu_seconds(pids)
    prober = asyncio.create_task(probe())
    separate = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.page_probe", str(server.port)]
        + [bench.viewer_keys[0], str(PAGES_PER_SECOND)]
        + [str(game_id) for game_id in random.sample(bench.game_ids, 500)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    # Moves right after the restart, before most streams are back.
    first = set(bench.posted)
    await asyncio.gather(
        *(
            bench.make_move(bench.mover_keys[i % len(bench.mover_keys)], server.port)
            for i in range(args.movers)
        )
    )
    moves = [key for key in bench.posted if key not in first]

    def back(stream, before):
        return len(stream.opens) > before and (
            max(stream.received, default=0) >= bench.versions[stream.game_id]
            or stream.first_version >= bench.versions[stream.game_id]
        )

    all_back = await bench.wait_until(
        lambda: all(
            back(s, n) for s, n in zip(bench.streams, opens_before, strict=True)
        ),
        args.restart_deadline,
        "every stream to reconnect and catch up",
    )
    done_at = now()
    wave_cpu = cpu_seconds(pids)  # the restarted processes' CPU since they began
    probing = False
    await prober
    # Its standard input closed, the probe answers what it saw.
    printed, _ = await loop.run_in_executor(None, separate.communicate, "")
    apart = [(ms, status) for sent, ms, status in json.loads(printed) if sent >= up_at]
    await bench.settle(moves, timeout=5)
    reconnects = sorted(
        s.opens[n]
        for s, n in zip(bench.streams, opens_before, strict=True)
        if len(s.opens) > n
    )
    attempts = sorted(t for s in bench.streams for t in s.attempts if t >= down_at)
    peak = 0
    start_index = 0
    for index, t in enumerate(reconnects):
        while reconnects[start_index] < t - 0.1:
            start_index += 1
        peak = max(peak, index - start_index + 1)
    stuck = sum(
        1 for s, n in zip(bench.streams, opens_before, strict=True) if not back(s, n)
    )
    wave = [(ms, status) for started, ms, status in pages if started >= up_at]
    # Page p95 in each second of the wave: a cold start's first pages, or the
    # whole wave?
    by_second = collections.defaultdict(list)
    for started, ms, _ in pages:
        if started >= up_at:
            by_second[int(started - up_at)].append(ms)
    result = {
        "shutdown_s": round(down_at - stopped_at, 1),
        # Server.stop kills the server when SIGTERM has not ended it in 20 s.
        "shutdown_killed": server.process.returncode == -signal.SIGKILL,
        "startup_s": round(up_at - down_at, 1),
        "all_back": all_back,
        "not_back": stuck,
        "back_after_restart_s": round(done_at - stopped_at, 1),
        "back_after_up_s": round(done_at - up_at, 1),
        "reconnected": len(reconnects),
        "reconnect_spread_s": {
            "first": round(reconnects[0] - up_at, 2) if reconnects else None,
            "p50": round(reconnects[len(reconnects) // 2] - up_at, 2)
            if reconnects
            else None,
            "last": round(reconnects[-1] - up_at, 2) if reconnects else None,
        },
        "reconnect_peak_per_100ms": peak,
        "connect_attempts_while_down_or_after": len(attempts),
        "moves_after_restart": len(moves),
        "duplicated": duplicates(bench) - dup_before,
        "pages_during_wave": percentiles([ms for ms, _ in apart]),
        "pages_during_wave_on_the_streams_loop": percentiles([ms for ms, _ in wave]),
        "page_p95_ms_by_second": {
            second: percentiles(times).get("p95_ms")
            for second, times in sorted(by_second.items())
        },
        # The restarted processes' CPU from their start until every stream was
        # back (start-up included: streams reconnect while it goes on), and up to
        # the moment they answered: what the wave costs, whatever the load.
        "wave_server_cpu_s": round(wave_cpu, 2),
        "startup_server_cpu_s": round(cpu_at_up, 2),
        "pages_not_200": sum(1 for _, status in wave + apart if status != 200),
        "pages_refused_while_down": refused_pages,
    }
    result |= {"after_restart_" + k: v for k, v in bench.deliveries(moves).items()}
    spread = result["reconnect_spread_s"]
    print(
        f"  restart: shutdown {result['shutdown_s']} s"
        f"{' (killed)' if result['shutdown_killed'] else ''}, "
        f"startup {result['startup_s']} s; "
        f"every stream back and caught up: {all_back} ({stuck} not) "
        f"{result['back_after_restart_s']} s after the restart began (target < 30), "
        f"{result['back_after_up_s']} s after the server answered; reconnects "
        f"{spread['first']}..{spread['last']} s after it answered (median "
        f"{spread['p50']}), peak {peak} per 100 ms; {len(moves)} moves right after: "
        f"missed {result['after_restart_missed']}; duplicated {result['duplicated']}; "
        f"page p95 during the wave {result['pages_during_wave'].get('p95_ms')} ms "
        f"({result['pages_during_wave']['count']} pages from a process of their "
        "own; timed on the streams' loop "
        f"{result['pages_during_wave_on_the_streams_loop'].get('p95_ms')} ms, "
        f"{result['pages_not_200']} not 200); on the streams' loop by second "
        f"{result['page_p95_ms_by_second']}; server CPU from its start until "
        f"every stream was back {result['wave_server_cpu_s']} s (until it "
        f"answered {result['startup_server_cpu_s']} s)",
        flush=True,
    )
    return result, restarted


async def phase_fanout(bench: Bench, args) -> dict:
    steps = []
    for rate in args.fanout_rates:
        if len(bench.queue) < rate * args.step:
            print(f"  fan-out: not enough moves left for {rate}/s", flush=True)
            break
        first = set(bench.posted)
        dup_before = duplicates(bench)
        statuses = collections.Counter()
        started = now()
        pending = set()

        async def one(index, statuses=statuses):
            port = bench.ports[random.randrange(len(bench.ports))]  # through any
            session = bench.mover_keys[index % len(bench.mover_keys)]
            result = await bench.make_move(session, port)
            if result is not None:
                statuses[result[0]] += 1

        for index in range(int(rate * args.step)):
            delay = started + index / rate - now()
            if delay > 0:
                await asyncio.sleep(delay)  # open-loop schedule
            task = asyncio.create_task(one(index))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
        elapsed = now() - started
        moves = [key for key in bench.posted if key not in first]
        await bench.settle(moves, timeout=10)
        delivered = bench.deliveries(moves)
        step = {
            "rate": rate,
            "moves": len(moves),
            "achieved_per_s": round(len(moves) / elapsed, 1),
            "statuses": dict(statuses),
            "duplicated": duplicates(bench) - dup_before,
        } | delivered
        steps.append(step)
        print(
            f"  fan-out {rate}/s: {len(moves)} moves ({step['achieved_per_s']}/s), "
            f"{delivered['expected']} deliveries, missed {delivered['missed']}, "
            f"superseded {delivered['superseded']}; event p50 "
            f"{delivered['event'].get('p50_ms')} "
            f"p95 {delivered['event'].get('p95_ms')} ms",
            flush=True,
        )
    good = [
        s
        for s in steps
        if s["missed"] == 0 and s["event"].get("p95_ms", 1e9) < TARGET_MS
    ]
    best = max((s["achieved_per_s"] for s in good), default=0)
    print(
        f"  fan-out: {best} moves/s delivered to every watcher "
        f"with p95 < {TARGET_MS} ms",
        flush=True,
    )
    return {"steps": steps, "moves_per_s_within_target": best}


# ---------------------------------------------------------------------- run


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def with_machine(phase):
    """Run a phase; note how busy the machine and this client were: on a shared
    machine the figures mean little without it."""
    cpu = client_cpu_seconds()
    outcome = await phase
    note = {
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cores": os.cpu_count(),
        "client_cpu_s": round(client_cpu_seconds() - cpu, 1),
    }
    print(
        f"    machine: load average {note['load_average_1m']} on {note['cores']} "
        f"cores; this client used {note['client_cpu_s']} s of CPU",
        flush=True,
    )
    (outcome[0] if isinstance(outcome, tuple) else outcome)["machine"] = note
    return outcome


def session_wants(args) -> list[tuple[str, int]]:
    return [("bench", 4), ("bench-mover", max(args.movers, 4))]


async def single_host(database, args, workdir: Path) -> dict:
    print(
        f"\n== {database.name}: one host, 2 processes "
        f"({args.streams} streams, {args.games} games) ==",
        flush=True,
    )
    url, game_ids, keys = prepare_database(
        database, "live_scale", args.games, workdir, session_wants(args)
    )
    server = make_server(f"{database.name}-app", args.port, url, workdir)
    server.start()
    bench = Bench(args, game_ids, keys, [args.port])
    result = {}
    try:
        result["open"] = await with_machine(phase_open(bench, server, args))
        if "moves" in args.phases:
            result["moves"] = await with_machine(phase_moves(bench, args))
        if "restart" in args.phases:
            result["restart"], server = await with_machine(
                phase_restart(bench, server, args, workdir)
            )
    finally:
        await bench.stop()
        server.stop()
        if not args.keep:
            database.drop("live_scale")
    result["server_log"] = log_counts(sorted(workdir.glob(f"{database.name}-app*.log")))
    print(f"  server logs: {result['server_log']}", flush=True)
    return result


async def fan_out(args, workdir: Path) -> dict | None:
    postgres = PostgreSQL(POSTGRES_URL)
    if not postgres.reachable():
        print(f"\nfan-out: PostgreSQL at {POSTGRES_URL} not reachable, skipped")
        return None
    extra = {}
    if args.broker == "redis":
        extra["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    ports = [args.port + 10 + n for n in range(4)]
    print(
        f"\n== postgres fan-out: 4 servers on ports {ports} ({args.broker}), "
        f"{args.streams} streams ==",
        flush=True,
    )
    url, game_ids, keys = prepare_database(
        postgres, "live_fanout", args.fanout_games, workdir, session_wants(args)
    )
    servers = [
        make_server("fanout", port, url, workdir, workers=1, extra=extra)
        for port in ports
    ]
    bench = Bench(args, game_ids, keys, ports)
    try:
        for server in servers:
            server.start()
        took = await bench.open_streams(args.streams)
        print(
            f"  {bench.open_count()} streams open over 4 servers in {took:.1f} s",
            flush=True,
        )
        result = await with_machine(phase_fanout(bench, args))
        result["broker"] = args.broker
    finally:
        await bench.stop()
        for server in servers:
            server.stop()
        if not args.keep:
            postgres.drop("live_fanout")
    result["server_log"] = log_counts([server.log for server in servers])
    print(f"  server logs: {result['server_log']}", flush=True)
    return result


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--games", type=int, default=5_000)
    parser.add_argument("--movers", type=int, default=25)
    parser.add_argument("--duration", type=float, default=30, help="seconds of moves")
    parser.add_argument(
        "--think",
        type=float,
        default=0,
        help="seconds each mover waits between moves (0: back to back)",
    )
    parser.add_argument("--idle", type=float, default=15, help="seconds of idle CPU")
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--phases", default="open,moves,restart,fanout")
    parser.add_argument("--broker", choices=["notify", "redis"], default="notify")
    parser.add_argument("--fanout-games", type=int, default=None)
    parser.add_argument(
        "--fanout-rates", default="10,20,40,80,160", help="moves/s, one step each"
    )
    parser.add_argument("--step", type=float, default=8, help="seconds per rate step")
    parser.add_argument("--restart-deadline", type=float, default=120)
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("BENCH_PORT", "8401")) + 20
    )
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    args = parser.parse_args(argv)
    args.phases = args.phases.split(",")
    args.fanout_rates = [float(r) for r in args.fanout_rates.split(",")]
    if args.fanout_games is None:
        args.fanout_games = args.games
    return args


async def run(args, workdir: Path) -> dict:
    results = {}
    wanted = args.databases.split(",")
    for name in wanted:
        database = SQLite(workdir) if name == "sqlite" else PostgreSQL(POSTGRES_URL)
        if name == "postgres" and not database.reachable():
            print(f"\npostgres at {POSTGRES_URL}: not reachable, skipped")
            continue
        if {"open", "moves", "restart"} & set(args.phases):
            results[name] = await single_host(database, args, workdir)
    if "fanout" in args.phases:
        results["fanout"] = await fan_out(args, workdir)
    return results


def main(argv=None) -> None:
    args = parse(argv)
    limit = raise_open_files_limit()
    needed = args.streams + 2 * args.movers + 200
    if limit < needed:
        raise SystemExit(f"open files limit {limit} < {needed}: raise it (ulimit -n)")
    started = time.monotonic()
    workdir = Path(
        tempfile.mkdtemp(prefix=os.environ.get("BENCH_TMP", "ttt-live-scale-"))
    )
    print(f"live scale: work files in {workdir}; open files limit {limit}", flush=True)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=django_env("sqlite://:memory:"),
        check=True,
    )
    results = asyncio.run(run(args, workdir))
    RESULTS.write_text(
        json.dumps(
            {"args": vars(args), "results": results},
            indent=2,
        )
    )
    print(f"\nwrote {RESULTS.name}; took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
