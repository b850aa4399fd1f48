"""Run the site: `python -m tictactoe_site.server.serve` (`make run`, `make serve`).

One uvicorn server (httptools, uvloop) per worker process runs
tictactoe_site.server.asgi. Settings come from the environment:

HOST (127.0.0.1), PORT (8000), WEB_CONCURRENCY (server processes, 2),
WEB_THREADS (page threads per process, 4: see tictactoe_site.server.bridge),
WEB_PIN_CPUS (on: each process on a CPU of its own, tictactoe_site.server.cpus),
TASK_WORKERS (background task workers started beside the server, 1; 0 when a
process manager runs `python -m tictactoe_site.jobs.worker` on its own),
WEB_RELOAD (1: restart on code changes, for development), WEB_ACCESS_LOG (off:
the proxy in front logs requests; 1 logs each one here too),
WEB_MAX_CONNECTIONS (open connections per process, live streams included, that
the open-file limit must allow, 10000: see tictactoe_site.server.limits).
These and the settings are read before anything starts: a value they refuse
(tictactoe_site.lib.env) stops the start with one line.
"""

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import uvicorn
from uvicorn.supervisors import ChangeReload, Multiprocess

from tictactoe_site.jobs.worker import PARENT_PID
from tictactoe_site.lib.env import (
    ConfigurationError,
    env_bool,
    env_choice,
    env_int,
    env_str,
    reports_configuration_errors,
)
from tictactoe_site.ops import logs, metrics_dir
from tictactoe_site.server.limits import open_files_warning, raise_open_files_limit

logger = logging.getLogger("uvicorn.error")

APP = "tictactoe_site.server.asgi:application"
WORKER = "tictactoe_site.jobs.worker"


class Config(uvicorn.Config):
    def bind_socket(self) -> socket.socket:
        """uvicorn binds the shared socket itself for several workers or reload;
        its accepted connections would lack TCP_NODELAY, and Nagle's algorithm
        would hold back keep-alive responses (uvicorn issue #3149). Linux
        copies the option from the listening socket, so set it there."""
        sock = super().bind_socket()
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def config() -> Config:
    """The server's settings from the environment (sets up uvicorn's logging)."""
    reload = env_bool("WEB_RELOAD")
    workers = env_int("WEB_CONCURRENCY", 2, minimum=1)
    host = env_str("HOST", "127.0.0.1")
    # 0: any free port, as the operating system picks (tests use it).
    port = env_int("PORT", 8000, minimum=0, maximum=65535)
    access_log = env_bool("WEB_ACCESS_LOG")
    # The server's own lines as the app's (DJANGO_LOG_FORMAT, tictactoe_site.ops.logs).
    log_format = env_choice("DJANGO_LOG_FORMAT", "text", logs.FORMATS)
    return Config(
        APP,
        host=host,
        port=port,
        workers=1 if reload else workers,
        reload=reload,
        reload_dirs=["games", "tictactoe_site", "templates"] if reload else None,
        lifespan="on",
        access_log=access_log,
        log_config=logs.uvicorn_config(log_format),
        # The server believes no X-Forwarded-* header: the client address and
        # scheme are decided in one place, by Django, from
        # DJANGO_TRUSTED_PROXY_COUNT (tictactoe_site.settings).
        proxy_headers=False,
        server_header=False,
        # Open live streams never finish by themselves: give them a moment, then
        # close them (browsers reconnect to the next server and catch up).
        timeout_graceful_shutdown=3,
    )


class TaskWorker:
    """`python -m tictactoe_site.jobs.worker` beside the server: started with it,
    started again when it dies, stopped with it."""

    # Seconds before a restart: doubled each time the worker dies within
    # STABLE_AFTER of its start (a broken setup does not spin), up to MAX_DELAY.
    FIRST_DELAY, MAX_DELAY, STABLE_AFTER = 1.0, 60.0, 30.0

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.lock = threading.Lock()  # no new process once stop() has begun
        self.process: subprocess.Popen | None = None
        self.watcher = threading.Thread(target=self._keep_running, daemon=True)

    def start(self) -> None:
        self.watcher.start()

    def _keep_running(self) -> None:
        delay = self.FIRST_DELAY
        while True:
            with self.lock:
                if self.stopping.is_set():
                    return
                self.process = subprocess.Popen(
                    [sys.executable, "-m", WORKER],
                    env=os.environ | {PARENT_PID: str(os.getpid())},
                )
            started = time.monotonic()
            logger.info("Started task worker [%d]", self.process.pid)
            code = self.process.wait()
            if time.monotonic() - started > self.STABLE_AFTER:
                delay = self.FIRST_DELAY
            if self.stopping.wait(delay):
                return
            logger.warning("Task worker exited (%d); starting it again", code)
            delay = min(delay * 2, self.MAX_DELAY)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM: the worker finishes the task in hand (an email send is
        bounded by DJANGO_EMAIL_TIMEOUT), then exits; kill it after `timeout`."""
        with self.lock:
            self.stopping.set()
            process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def refuse_public_debug(cfg: Config) -> None:
    """Debug mode only on a loopback address, unless told twice
    (tictactoe_site.ops.preflight). Loads the settings, so a variable they refuse
    stops the start here too."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
    from tictactoe_site.ops.preflight import DEBUG_ON_PUBLIC_ADDRESS, debug_refusal

    refusal = debug_refusal(cfg.host, allowed=env_bool(DEBUG_ON_PUBLIC_ADDRESS))
    if refusal:
        raise ConfigurationError(refusal)


def _exit_on_sigterm(signum, frame) -> None:
    """SIGTERM ends the server through its `finally`, which stops the task
    workers: uvicorn raises the signal again once it has shut down (its
    "cooperative signal handling", uvicorn pull request 1600), and SIGTERM's
    default action would end the process on the spot, the workers left running."""
    raise SystemExit(128 + signum)


@reports_configuration_errors
def main() -> None:
    cfg = config()
    max_connections = env_int("WEB_MAX_CONNECTIONS", 10000, minimum=1)
    task_workers = env_int("TASK_WORKERS", 1, minimum=0)
    if task_workers > 1 and env_str("TASK_WORKER_ID"):
        # Under one id, a worker started again would requeue what its siblings
        # are sending: each sibling's email could go twice.
        raise ConfigurationError(
            f"TASK_WORKER_ID names one worker, but TASK_WORKERS={task_workers}: "
            "unset TASK_WORKER_ID (each worker then has an id of its own)."
        )
    refuse_public_debug(cfg)
    metrics_dir.share(server_start=True)
    warning = open_files_warning(raise_open_files_limit(), max_connections)
    if warning:
        logger.warning(warning)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    workers = [TaskWorker() for _ in range(task_workers)]
    for worker in workers:
        worker.start()
    try:
        if cfg.should_reload:
            server = uvicorn.Server(cfg)
            ChangeReload(cfg, target=server.run, sockets=[cfg.bind_socket()]).run()
        elif cfg.workers > 1:
            Multiprocess(cfg, sockets=[cfg.bind_socket()]).run()
        else:
            uvicorn.Server(cfg).run()
    finally:
        for worker in workers:
            worker.stop()


if __name__ == "__main__":
    main()
