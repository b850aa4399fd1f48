"""Run the site: `python -m tictactoe_site.serve` (what `make run` and `make serve` do).

One uvicorn server (httptools, uvloop) per worker process runs
tictactoe_site.asgi. Settings come from the environment:

HOST (127.0.0.1), PORT (8000), WEB_CONCURRENCY (worker processes, 2),
WEB_THREADS (0: each page runs on its process's event loop, one at a time, as in
a sync worker; N: in N page threads per process, see tictactoe_site.bridge),
WEB_RELOAD (1: restart on code changes, for development), WEB_ACCESS_LOG (off:
the proxy in front logs requests; 1 logs each one here too),
FORWARDED_ALLOW_IPS (proxies whose X-Forwarded-* headers are trusted, 127.0.0.1),
WEB_MAX_CONNECTIONS (open connections per process, live streams included, that
the open-file limit must allow, 10000: see tictactoe_site.limits).
"""

import logging
import os
import socket

import uvicorn
from uvicorn.supervisors import ChangeReload, Multiprocess, multiprocess

from .limits import open_files_warning, raise_open_files_limit

APP = "tictactoe_site.asgi:application"


class Config(uvicorn.Config):
    def bind_socket(self) -> socket.socket:
        """uvicorn binds the shared socket itself for several workers or reload;
        its accepted connections would lack TCP_NODELAY (a ~40 ms stall per
        keep-alive request under plain asyncio, uvicorn issue #3149). Linux
        copies the option from the listening socket, so set it there."""
        sock = super().bind_socket()
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


class Server(uvicorn.Server):
    async def shutdown(self, sockets=None) -> None:
        """End the live streams first: uvicorn then waits only for pages in
        flight, instead of cancelling every open stream after the grace period
        (a CancelledError traceback each, and a late exit)."""
        from games.live import hub  # the app, and so Django, is loaded by now

        hub.close_streams()
        await super().shutdown(sockets)


# uvicorn's Multiprocess builds each worker's server from this module attribute.
multiprocess.Server = Server


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def config() -> Config:
    reload = _flag("WEB_RELOAD")
    return Config(
        APP,
        host=os.environ.get("HOST", "127.0.0.1"),
        port=int(os.environ.get("PORT", "8000")),
        workers=1 if reload else int(os.environ.get("WEB_CONCURRENCY", "2")),
        reload=reload,
        reload_dirs=["games", "tictactoe_site", "templates"] if reload else None,
        lifespan="on",
        access_log=_flag("WEB_ACCESS_LOG"),
        proxy_headers=True,
        forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
        server_header=False,
        # Open live streams never finish by themselves: give them a moment, then
        # close them (browsers reconnect to the next server and catch up).
        timeout_graceful_shutdown=3,
    )


def main() -> None:
    cfg = config()  # sets up uvicorn's logging
    warning = open_files_warning(
        raise_open_files_limit(), int(os.environ.get("WEB_MAX_CONNECTIONS", "10000"))
    )
    if warning:
        logging.getLogger("uvicorn.error").warning(warning)
    server = Server(cfg)
    if cfg.should_reload:
        ChangeReload(cfg, target=server.run, sockets=[cfg.bind_socket()]).run()
    elif cfg.workers > 1:
        Multiprocess(cfg, sockets=[cfg.bind_socket()]).run()
    else:
        server.run()


if __name__ == "__main__":
    main()
