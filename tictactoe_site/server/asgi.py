"""The application every server process runs (see tictactoe_site.server.serve).

Live-update streams (games.live.streams) and the liveness probe (/livez,
tictactoe_site.ops.health) are answered right here on the event loop; everything
else is a Django page, run through Django's WSGI handler
(tictactoe_site.server.bridge): account pages in WEB_ACCOUNT_THREADS threads of their
own, GET and HEAD pages on the event loop when every read is local
(WEB_READS_ON_LOOP), every other page in a pool of WEB_THREADS page threads.
Pages keep the cost they have under a WSGI server, an open stream holds no
thread, a page that may wait never holds up the loop, and a burst of logins
never holds up the game pages.
"""

import asyncio
import logging
import os
import signal
import threading

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")

from tictactoe_site.ops import sentry  # noqa: E402

sentry.start()  # before Django serves anything; nothing without SENTRY_DSN
pages = get_wsgi_application()

from django.conf import settings  # noqa: E402

from games.live import streams  # noqa: E402  (needs the apps loaded)
from games.live.hub import hub  # noqa: E402
from tictactoe_site.lib import private_dirs  # noqa: E402
from tictactoe_site.ops import health, metrics, middleware  # noqa: E402
from tictactoe_site.server import cpus  # noqa: E402
from tictactoe_site.server.bridge import WsgiBridge  # noqa: E402

# The pages that may hash a password: sign-in, sign-up, password and email
# changes (accounts.urls) and the admin's sign-in (tictactoe_site.urls).
ACCOUNT_PATHS = ("/accounts/", "/admin/")
# The requests that only read, which WEB_READS_ON_LOOP runs on the event loop.
READ_METHODS = ("GET", "HEAD")

bridge = WsgiBridge(
    pages,
    threads=settings.WEB_THREADS,
    account_threads=settings.WEB_ACCOUNT_THREADS,
    account_paths=ACCOUNT_PATHS,
)

SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)

logger = logging.getLogger(__name__)


async def application(scope, receive, send):
    if scope["type"] == "http":
        if scope["path"] == LIVENESS_PATH:
            await answer_liveness(scope, send)
        elif (stream := streams.route(scope["path"])) is not None:
            await middleware.serve_stream(
                stream.handler, scope, receive, send, stream.name
            )
        else:
            await bridge(scope, receive, send)
    elif scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})


LIVENESS_PATH = "/livez"
NEVER_CACHE = b"max-age=0, no-cache, no-store, must-revalidate, private"


async def answer_liveness(scope, send) -> None:
    """/livez: this process serves. Answered on the loop, never queued behind
    busy page threads (a liveness probe that timed out there would get a
    working process restarted); the same answer as the page's
    (tictactoe_site.ops.health), for any Host header, without a session."""
    if scope["method"] in health.METHODS:
        status, body = 200, health.OK
        headers = [(b"content-type", b"text/plain")]
    else:
        status, body = 405, b""
        headers = [(b"allow", ", ".join(health.METHODS).encode())]
    headers += [
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", NEVER_CACHE),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    sent = b"" if scope["method"] == "HEAD" else body
    await send({"type": "http.response.body", "body": sent})


async def _lifespan(receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if settings.WEB_PIN_CPUS:
                pin_to_own_cpu()
            if settings.WEB_READS_ON_LOOP:
                run_reads_on_loop()
            hub.start()
            metrics.start_sampling()
            end_streams_on_shutdown_signal(asyncio.get_running_loop())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            hub.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return


def pin_to_own_cpu() -> None:
    """This process's loop, and the page threads it starts from now on, on a CPU
    of their own (tictactoe_site.server.cpus). The choice is made under a lock file in
    the private cache directory; where that cannot be written the process runs
    unpinned, as it would with WEB_PIN_CPUS=0."""
    try:
        private_dirs.make(settings.CACHE_DIR)
        cpus.pin_to_own_cpu(settings.CACHE_DIR / "cpus.lock")
    except OSError as exc:
        logger.warning("Not pinned to a CPU: %s", exc)


def run_reads_on_loop() -> None:
    """From now on this process runs GET and HEAD pages on its event loop.

    Django refuses database calls in a thread with a running event loop unless
    DJANGO_ALLOW_ASYNC_UNSAFE is set, its documented switch for code that does
    so on purpose; set in the server process only, once it is serving. Such a
    page reads a local SQLite file and never waits for a lock; it writes nothing
    there in the ordinary course (tests/games/test_reads_write_nothing.py): a player's
    "last seen" follows the response in a page thread (lib.deferred.defer), messages
    travel in a cookie. What remains is rare and short, as the app holds the
    write lock for milliseconds: clearing a session that ended elsewhere.
    """
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    bridge.run_on_loop(READ_METHODS)


def end_streams_on_shutdown_signal(loop: asyncio.AbstractEventLoop) -> None:
    """On SIGTERM or SIGINT, end every live stream, then let the server's own
    handler begin its graceful shutdown.

    The server waits for open connections before it tells the app it is shutting
    down (the lifespan event), and a live stream never ends by itself: without
    this every stream would be cancelled after the grace period. The handler
    chains to the one the server installed (uvicorn sets its own before the
    lifespan starts and restores the previous ones when it stops).
    """
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set in the main thread
    for signum in SHUTDOWN_SIGNALS:
        previous = signal.getsignal(signum)
        if not callable(previous):
            continue

        def handler(signum, frame, previous=previous):
            loop.call_soon_threadsafe(hub.close_streams)
            previous(signum, frame)

        signal.signal(signum, handler)
