"""Django's WSGI application behind an ASGI server.

Why not Django's ASGI handler: it hops between the event loop and a thread for
every middleware hook and for the sync view. Why not a2wsgi: it relays the body
through a queue. tests/bench/servers.py measures both against this bridge;
docs/performance.md has the numbers.

Where a page runs:

- The account pages (sign-in, sign-up, password and email changes: every page
  that may hash a password, about 0.3 s of CPU each) run in a pool of their own,
  so a burst of logins never holds every page thread, and on Linux its threads
  run at a lower CPU priority (nice +ACCOUNT_NICENESS), so the hashing yields the
  cores to game pages and to the event loop.
- Requests whose method is one of `loop_methods` (GET and HEAD when every read
  is local: tictactoe_site.server.asgi) run on the event loop itself. A thread
  costs each page its hand-offs of the interpreter lock with the loop: every
  system call the page makes while the loop has work is one, about 20 context
  switches per page under load (docs/performance.md). Such a page only reads,
  and a local read never waits for anyone; what it has to write it hands to
  `environ[DEFER]` (tictactoe_site.lib.deferred).
- Every other page runs in a pool of worker threads, never on the event loop: a
  page that writes may wait for the SQLite write lock or for another machine,
  and that must not hold up the live streams the loop serves. The pool's size
  bounds the pages one process runs at once.

`environ[DEFER]` takes a function of no arguments and runs it in a page thread
after the response has been sent: writes a page may skip when the process stops
(a player's "last seen"), out of the page's way wherever the page ran. Apps
reach it through tictactoe_site.lib.deferred.defer, never through this module.

The request body is read before the call (bounded: larger bodies get 413; a
client that disconnects before sending all of it gets nothing and reaches no
view, as under Django's own handlers); the response body is collected whole: the
app has no streaming responses (its only stream, the live updates, is served by
games.live.streams directly).
"""

import asyncio
import contextvars
import io
import logging
import os
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

from tictactoe_site.lib.deferred import DEFER
from tictactoe_site.server.cpus import unpin_thread

logger = logging.getLogger(__name__)

REQUEST_TOO_LARGE = b"Request body too large."
# How much lower the account threads' CPU priority is (Linux nice values: a
# thread at +10 gets about a tenth of the CPU time of one at 0 when they compete,
# so pages come first and logins still progress on a busy host). At +5 (a third),
# on a host where a check takes 0.65 s, two logins a second pushed the page p99
# past 20 ms (docs/performance.md).
ACCOUNT_NICENESS = 10


def _body_limit() -> int:
    limits = [
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        settings.FILE_UPLOAD_MAX_MEMORY_SIZE,
    ]
    return max(limit for limit in limits if limit is not None) + 64 * 1024


def build_environ(scope, body: bytes) -> dict:
    """The PEP 3333 environ for an ASGI HTTP scope."""
    root_path = scope.get("root_path", "")
    path = scope["path"]
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root_path.encode().decode("latin-1"),
        "PATH_INFO": path.encode().decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]) if server[1] is not None else "80",
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").upper()
        if "_" in name:
            # X_Forwarded and X-Forwarded would both become HTTP_X_FORWARDED:
            # drop the ambiguous spelling, as gunicorn and nginx do.
            continue
        value = raw_value.decode("latin-1")
        if name == "CONTENT-TYPE":
            key = "CONTENT_TYPE"
        elif name == "CONTENT-LENGTH":
            key = "CONTENT_LENGTH"
        else:
            key = "HTTP_" + name.replace("-", "_")
        if key in environ:
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    return environ


class Disconnected(Exception):
    """The client went away before sending the whole request body."""


def _account_thread() -> None:
    """Lower the calling thread's CPU priority and let it use every CPU of the
    process (its hashing runs without the interpreter lock: tictactoe_site.server.cpus).
    On Linux a nice value belongs to the thread (setpriority(2)); elsewhere it
    would lower the whole process, so leave it."""
    if sys.platform == "linux":
        os.nice(ACCOUNT_NICENESS)
    unpin_thread()


def _run_deferred(work: Callable[[], object]) -> None:
    """`work` outside a request: the connection checks Django makes at a
    request's start and end are made here (a pooled connection goes back)."""
    close_old_connections()
    try:
        work()
    except Exception:
        logger.exception("deferred work %r failed", work)
    finally:
        close_old_connections()


class WsgiBridge:
    """`threads` page threads; paths starting with one of `account_paths` run in
    `account_threads` threads of their own, at a lower CPU priority; other
    requests whose method is one of `loop_methods` (`run_on_loop`) run on the
    event loop."""

    def __init__(
        self,
        app,
        *,
        threads: int,
        account_threads: int = 1,
        account_paths: tuple[str, ...] = (),
    ) -> None:
        if threads < 1:
            raise ValueError(f"A page needs at least one thread, not {threads}.")
        if account_threads < 1:
            raise ValueError(
                f"An account page needs at least one thread, not {account_threads}."
            )
        self.app = app
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi")
        self.account_pool = ThreadPoolExecutor(
            account_threads,
            thread_name_prefix="wsgi-account",
            initializer=_account_thread,
        )
        self.account_paths = account_paths
        self.loop_methods: frozenset[str] = frozenset()
        # The context pages on the loop run in, one for all of them, as each page
        # thread has its own: what Django keeps per context (its cache
        # connections: asgiref.local.Local) then lasts from one page to the next,
        # as it does in a thread, instead of being built again in each request's
        # task (a copy of the context that ends with the request).
        self.loop_context = contextvars.Context()
        self.limit: int | None = None

    def run_on_loop(self, methods: Iterable[str]) -> None:
        """Requests with one of these methods (and no account path) run on the
        event loop from now on."""
        self.loop_methods = frozenset(methods)

    async def __call__(self, scope, receive, send) -> None:
        if self.limit is None:
            self.limit = _body_limit()
        try:
            body = await self._read_body(receive)
        except Disconnected:
            return
        if body is None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 413,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": REQUEST_TOO_LARGE})
            return
        environ = build_environ(scope, body)
        deferred: list[Callable[[], object]] = []
        environ[DEFER] = deferred.append
        if environ["PATH_INFO"].startswith(self.account_paths):
            pool = self.account_pool
        elif environ["REQUEST_METHOD"] in self.loop_methods:
            pool = None
        else:
            pool = self.pool
        if pool is None:
            status, headers, content = self.loop_context.run(self._call, environ)
        else:
            loop = asyncio.get_running_loop()
            call = loop.run_in_executor(pool, self._call, environ)
            status, headers, content = await call
        try:
            await send(
                {"type": "http.response.start", "status": status, "headers": headers}
            )
            await send({"type": "http.response.body", "body": content})
        finally:
            for work in deferred:
                self.pool.submit(_run_deferred, work)

    async def _read_body(self, receive) -> bytes | None:
        """The whole body; None when it exceeds the limit."""
        chunks = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _call(self, environ) -> tuple[int, list, bytes]:
        response = {}

        def start_response(status, headers, exc_info=None):
            if exc_info is not None and "status" in response:
                raise exc_info[1].with_traceback(exc_info[2])
            response["status"] = int(status[:3])
            response["headers"] = [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in headers
            ]
            return written.append

        written: list[bytes] = []
        result = self.app(environ, start_response)
        try:
            written.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return response["status"], response["headers"], b"".join(written)
