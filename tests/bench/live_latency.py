"""Live-update latency: how long after a move's POST returns do the other open
pages hear of it (the stream's event) and show it (the live partial fetched)?

    measure(base_url, session_cookies, game_ids, streams=200, moves=200)

opens `streams` SSE streams spread over `game_ids` (alternately as X's and O's
player), plays `moves` moves by POST (each by the player whose turn it is, at
most `concurrency` at once), and for every stream of the moved game records the
time from the POST's start to (a) the event arriving and (b) the live partial
fetched after it (the event may come before the POST's response: the server
publishes on commit). It also counts missed and duplicated events.
`session_cookies` is either one (x_session, o_session) pair for every game or a
dict {game_id: (x_session, o_session)}.

CLI (signs up two users and creates the games itself):

    python tests/bench/live_latency.py --base-url http://127.0.0.1:8000 \
        --games 100 --streams 200 --moves 200

Only the standard library: it runs against any server, from any Python >= 3.12.
"""

import argparse
import asyncio
import json
import re
import secrets
import statistics
import time
import urllib.parse

CELL_ORDER = (0, 1, 2, 4, 3, 5, 7, 6, 8)  # played in this order, a game is a draw
TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


class Http:
    """Minimal HTTP/1.1 over asyncio: one connection per request."""

    def __init__(self, base_url: str):
        parts = urllib.parse.urlsplit(base_url)
        self.host = parts.hostname
        self.port = parts.port or 80

    async def request(self, method, path, cookies, body=b"", headers=()):
        reader, writer = await asyncio.open_connection(self.host, self.port)
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Connection: close",
            "Cookie: " + "; ".join(f"{k}={v}" for k, v in cookies.items()),
            *headers,
        ]
        if body:
            lines += [
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {len(body)}",
            ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        status, response_headers = await _read_head(reader)
        content = await reader.read()
        writer.close()
        return status, response_headers, content

    async def stream(self, path, session):
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Accept: text/event-stream\r\nCookie: sessionid={session}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status, headers = await _read_head(reader)
        if status != 200:
            raise RuntimeError(f"stream {path} answered {status}")
        return reader, writer, headers


async def _read_head(reader):
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    headers = []
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return status, headers


async def _stream_lines(reader, chunked: bool):
    """The stream's lines, undoing chunked transfer encoding."""
    buffer = b""
    while True:
        if chunked:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                return
            buffer += await reader.readexactly(size + 2)
            buffer = buffer[:-2]
        else:
            data = await reader.read(65536)
            if not data:
                return
            buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line


class Player:
    def __init__(self, http: Http, session: str):
        self.http = http
        self.cookies = {"sessionid": session}
        self.token = None
        self.lock = asyncio.Lock()

    async def ensure_csrf(self, game_id: int):
        async with self.lock:  # one CSRF cookie per player, however many movers
            if self.token is None:
                await self._fetch_csrf(game_id)

    async def _fetch_csrf(self, game_id: int):
        _, headers, html = await self.http.request(
            "GET", f"/games/{game_id}/", self.cookies
        )
        for name, value in headers:
            if name == "set-cookie" and value.startswith("csrftoken="):
                self.cookies["csrftoken"] = value.split(";", 1)[0].split("=", 1)[1]
        self.token = TOKEN.search(html)[1].decode()


def _pairs(session_cookies, game_ids):
    if isinstance(session_cookies, dict):
        return {game_id: tuple(session_cookies[game_id]) for game_id in game_ids}
    x_session, o_session = session_cookies
    return dict.fromkeys(game_ids, (x_session, o_session))


def percentiles(values: list[float]) -> dict:
    """Milliseconds summarised: count, p50/p95/p99, min, max, mean."""
    if not values:
        return {"count": 0}
    ordered = sorted(values)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)

    return {
        "count": len(ordered),
        "p50_ms": at(0.50),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "max_ms": round(ordered[-1], 1),
        "min_ms": round(ordered[0], 1),
        "mean_ms": round(statistics.fmean(ordered), 1),
    }


async def _measure(base_url, session_cookies, game_ids, streams, moves, concurrency):
    http = Http(base_url)
    pairs = _pairs(session_cookies, game_ids)
    players = {s: Player(http, s) for pair in pairs.values() for s in pair}
    states = {}
    for game_id in game_ids:
        _, _, body = await http.request(
            "GET", f"/games/{game_id}/state.json", {"sessionid": pairs[game_id][0]}
        )
        states[game_id] = json.loads(body)

    posted_at: dict[tuple[int, int], float] = {}  # (game, version) -> POST started
    arrivals: list[tuple[int, int, float, int]] = []  # game, version, when, stream
    partial_ms: list[float] = []
    event_ms: list[float] = []
    pending_fetches = set()
    ready = asyncio.Event()
    opened = 0

    async def fetch_partial(game_id, version, session):
        await http.request("GET", f"/games/{game_id}/live/", {"sessionid": session})
        start = posted_at.get((game_id, version))
        if start is not None:
            partial_ms.append((time.perf_counter() - start) * 1000)

    async def watch(index, game_id, session):
        nonlocal opened
        path = f"/games/{game_id}/events/?v={states[game_id]['version']}"
        reader, writer, headers = await http.stream(path, session)
        chunked = ("transfer-encoding", "chunked") in headers
        opened += 1
        if opened == streams:
            ready.set()
        try:
            async for line in _stream_lines(reader, chunked):
                if line.startswith(b"id: "):
                    version = int(line[4:])
                    arrivals.append((game_id, version, time.perf_counter(), index))
                    task = asyncio.create_task(fetch_partial(game_id, version, session))
                    pending_fetches.add(task)
                    task.add_done_callback(pending_fetches.discard)
        finally:
            writer.close()

    watchers = [
        asyncio.create_task(
            watch(
                i,
                game_ids[i % len(game_ids)],
                pairs[game_ids[i % len(game_ids)]][i // len(game_ids) % 2],
            )
        )
        for i in range(streams)
    ]
    await asyncio.wait_for(ready.wait(), 60)

    playable = [g for g in game_ids if states[g]["status"] in ("in_progress",)]
    semaphore = asyncio.Semaphore(concurrency)
    made = 0

    async def play_one(game_id):
        nonlocal made
        state = states[game_id]
        board = [cell for row in state["board"] for cell in row]
        cell = next(c for c in CELL_ORDER if board[c] is None)
        mark = state["current_player"]
        player = players[pairs[game_id][0 if mark == "X" else 1]]
        await player.ensure_csrf(game_id)
        body = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": player.token,
                "row": cell // 3,
                "col": cell % 3,
                "ply": state["ply"],
            }
        ).encode()
        posted_at[(game_id, state["version"] + 1)] = time.perf_counter()
        status, _, _ = await http.request(
            "POST", f"/games/{game_id}/move/", player.cookies, body
        )
        if status != 302:
            raise RuntimeError(f"move on game {game_id} answered {status}")
        board[cell] = mark
        state["board"] = [board[0:3], board[3:6], board[6:9]]
        state["ply"] += 1
        state["version"] += 1
        state["current_player"] = "O" if mark == "X" else "X"
        made += 1

    async def worker(queue):
        while made < moves and queue:
            game_id = queue.pop(0)
            async with semaphore:
                if made >= moves:
                    return
                await play_one(game_id)
            if states[game_id]["ply"] < 9 and _undecided(states[game_id]):
                queue.append(game_id)

    queue = list(playable)
    await asyncio.gather(*(worker(queue) for _ in range(concurrency)))
    # Let the last events and partials arrive (bounded).
    deadline = time.perf_counter() + 5
    watchers_of = dict.fromkeys(game_ids, 0)
    for i in range(streams):
        watchers_of[game_ids[i % len(game_ids)]] += 1
    expected = sum(watchers_of[g] for g, _ in posted_at)
    while time.perf_counter() < deadline and (
        len(arrivals) < expected or pending_fetches
    ):
        await asyncio.sleep(0.05)
    for task in watchers:
        task.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)

    for game_id, version, arrived, _stream in arrivals:
        start = posted_at.get((game_id, version))
        if start is not None:
            event_ms.append((arrived - start) * 1000)
    heard = [(g, v, i) for g, v, _, i in arrivals if (g, v) in posted_at]
    result = {
        "streams": streams,
        "games": len(game_ids),
        "moves": made,
        "missed": expected - len(set(heard)),
        "duplicated": len(heard) - len(set(heard)),
    }
    result |= percentiles(event_ms)
    result["shown"] = percentiles(partial_ms)
    return result


def _undecided(state) -> bool:
    board = [cell for row in state["board"] for cell in row]
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8)]
    lines += [(0, 4, 8), (2, 4, 6)]
    return not any(board[a] and board[a] == board[b] == board[c] for a, b, c in lines)


def measure(
    base_url: str,
    session_cookies,
    game_ids: list[int],
    streams: int = 200,
    moves: int = 200,
    concurrency: int = 1,
) -> dict:
    """p50/p95/p99 (ms) from a move's POST returning to its event at each stream
    of that game; `shown` holds the same for the live partial fetched after."""
    return asyncio.run(
        _measure(base_url, session_cookies, list(game_ids), streams, moves, concurrency)
    )


async def _setup(base_url: str, games: int):
    """Two fresh users (signed up over HTTP) and `games` games between them."""
    http = Http(base_url)
    sessions = []
    names = [f"live{secrets.token_hex(3)}", f"live{secrets.token_hex(3)}"]
    for name in names:
        _, headers, html = await http.request("GET", "/accounts/signup/", {})
        csrf = next(
            v.split(";", 1)[0].split("=", 1)[1]
            for k, v in headers
            if k == "set-cookie" and v.startswith("csrftoken=")
        )
        body = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": TOKEN.search(html)[1].decode(),
                "username": name,
                "password1": "bench-password-123",
                "password2": "bench-password-123",
            }
        ).encode()
        _, headers, _ = await http.request(
            "POST", "/accounts/signup/", {"csrftoken": csrf}, body
        )
        sessions.append(
            next(
                v.split(";", 1)[0].split("=", 1)[1]
                for k, v in headers
                if k == "set-cookie" and v.startswith("sessionid=")
            )
        )
    creator = Player(http, sessions[0])
    _, headers, html = await http.request("GET", "/", creator.cookies)
    for k, v in headers:
        if k == "set-cookie" and v.startswith("csrftoken="):
            creator.cookies["csrftoken"] = v.split(";", 1)[0].split("=", 1)[1]
    token = TOKEN.search(html)[1].decode()
    game_ids = []
    for _ in range(games):
        body = urllib.parse.urlencode(
            {"csrfmiddlewaretoken": token, "opponent": names[1], "side": "x"}
        ).encode()
        _, headers, _ = await http.request("POST", "/games/new/", creator.cookies, body)
        location = dict(headers)["location"]
        game_ids.append(int(location.rstrip("/").rsplit("/", 1)[1]))
    return tuple(sessions), game_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--moves", type=int, default=200)
    parser.add_argument(
        "--concurrency", type=int, default=1, help="moves in flight at once"
    )
    args = parser.parse_args()
    sessions, game_ids = asyncio.run(_setup(args.base_url, args.games))
    result = measure(
        args.base_url,
        sessions,
        game_ids,
        streams=args.streams,
        moves=args.moves,
        concurrency=args.concurrency,
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
