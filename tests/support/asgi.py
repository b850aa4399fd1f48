"""The live streams driven in-process through the real ASGI application
(tictactoe_site.server.asgi), as uvicorn would: an HTTP scope, and `Stream`, one request
read as the browser's EventSource would. Every wait is bounded (BOUND)."""

import asyncio

from django.db import connection

from games import services
from tictactoe_site.server.asgi import application

BOUND = 10.0  # seconds: generous for a loaded CI machine, never slept


def http_scope(
    *, method: str, path: str, query_string: bytes, headers: list, server_name: str
) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query_string,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": (server_name, 80),
    }


def sessionid(client) -> str:
    return client.cookies["sessionid"].value


class Stream:
    """One request to the ASGI app, read as the browser's EventSource would."""

    def __init__(self, path: str, *, cookie: str = "", headers=(), method="GET"):
        path, _, query = path.partition("?")
        raw_headers = [(b"host", b"127.0.0.1")]
        if cookie:
            raw_headers.append((b"cookie", f"sessionid={cookie}".encode()))
        raw_headers += [(k.encode(), v.encode()) for k, v in headers]
        self.scope = http_scope(
            method=method,
            path=path,
            query_string=query.encode(),
            headers=raw_headers,
            server_name="127.0.0.1",
        )
        self.messages: asyncio.Queue = asyncio.Queue()
        self._gone = asyncio.Event()
        self._asked = False
        self._buffer = ""
        self.task = asyncio.create_task(
            application(self.scope, self._receive, self._send)
        )

    async def _receive(self):
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message):
        await self.messages.put(message)

    async def response(self) -> tuple[int, dict, bytes]:
        start = await asyncio.wait_for(self.messages.get(), BOUND)
        headers = {k.decode(): v.decode() for k, v in start["headers"]}
        body = b""
        if not headers.get("content-type", "").startswith("text/event-stream"):
            message = await asyncio.wait_for(self.messages.get(), BOUND)
            body = message["body"]
        return start["status"], headers, body

    async def event(self) -> dict:
        """The next dispatched SSE event (retry lines skipped), as its fields."""
        while True:
            if "\n\n" in self._buffer:
                block, self._buffer = self._buffer.split("\n\n", 1)
                fields = dict(
                    line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
                    for line in block.split("\n")
                )
                if "data" in fields:
                    return fields
                continue
            message = await asyncio.wait_for(self.messages.get(), BOUND)
            self._buffer += message["body"].decode()

    async def change(self) -> dict:
        """The next event that is not the hub's keep-alive ping: a stream waiting
        on a coalesced lobby refresh (up to a second) may be pinged meanwhile."""
        while (fields := await self.event()).get("event") == "ping":
            pass
        return fields

    async def close(self):
        self._gone.set()
        await asyncio.wait_for(self.task, BOUND)


def run(coroutine):
    return asyncio.run(coroutine)


def move(game, user, row, col):
    return services.play_move(game_id=game.pk, user=user, row=row, col=col)


async def in_thread(action, *args, **kwargs):
    """Run a service call in another thread, as a request in another worker would."""

    def call():
        try:
            return action(*args, **kwargs)
        finally:
            connection.close()

    return await asyncio.to_thread(call)
