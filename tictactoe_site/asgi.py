"""The application every server process runs (see tictactoe_site.serve).

Live-update streams (games.streams) are answered right here on the event loop;
everything else is a Django page, run through Django's WSGI handler in a pool of
WEB_THREADS page threads, account pages in WEB_ACCOUNT_THREADS threads of their
own (tictactoe_site.bridge): pages keep the cost they have under a WSGI server,
an open stream holds no thread, a slow page never holds up the loop, and a burst
of logins never holds up the game pages.
"""

import asyncio
import os
import signal
import threading

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")

pages = get_wsgi_application()

from django.conf import settings  # noqa: E402

from games import streams  # noqa: E402  (needs the apps loaded)
from games.live import hub  # noqa: E402

from .bridge import WsgiBridge  # noqa: E402

# The pages that may hash a password: sign-in, sign-up, password and email
# changes (accounts.urls) and the admin's sign-in (tictactoe_site.urls).
ACCOUNT_PATHS = ("/accounts/", "/admin/")

bridge = WsgiBridge(
    pages,
    threads=settings.WEB_THREADS,
    account_threads=settings.WEB_ACCOUNT_THREADS,
    account_paths=ACCOUNT_PATHS,
)

SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def application(scope, receive, send):
    if scope["type"] == "http":
        stream = streams.route(scope["path"])
        if stream is not None:
            await stream(scope, receive, send)
        else:
            await bridge(scope, receive, send)
    elif scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})


async def _lifespan(receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            hub.start()
            end_streams_on_shutdown_signal(asyncio.get_running_loop())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            hub.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return


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
