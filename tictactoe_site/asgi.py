"""The application every server process runs (see tictactoe_site.serve).

Live-update streams (games.streams) are answered right here on the event loop;
everything else is a Django page, run through Django's WSGI handler
(tictactoe_site.bridge; on the loop by default, WEB_THREADS=N for page threads):
pages keep the cost they have under a WSGI server, and an open stream holds no
thread.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")

pages = get_wsgi_application()

from games import streams  # noqa: E402  (needs the apps loaded)
from games.live import hub  # noqa: E402

from .bridge import WsgiBridge  # noqa: E402

bridge = WsgiBridge(pages, threads=int(os.environ.get("WEB_THREADS", "0")))


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
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            hub.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return
