"""With a SQLite file (all processes on one host) changes travel as datagrams
to a Unix socket per process, in a directory named after the database file
inside the private cache directory (settings.CACHE_DIR/live/,
tictactoe_site.lib.private_dirs).

Datagrams are never dropped while their receiver lives. Linux queues only
`net.unix.max_dgram_qlen` datagrams on a socket, so a receiver whose event loop
is behind (stopped, starved of CPU) refuses more for a while. The `Postman` then
keeps a backlog per destination, coalesced by game (only a game's latest version
matters, so the backlog is bounded by the number of games that changed), and a
retry thread sends it, many changes per datagram, until the receiver takes it or
its socket is gone (the process ended: its streams reconnect elsewhere and catch
up from `Last-Event-ID`). Only a sender that dies with a backlog loses news.
"""

import asyncio
import hashlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection

from tictactoe_site.lib import private_dirs

from ..changes import AccountChanged, Change
from ..wire import encode

logger = logging.getLogger("games.live")


def socket_directory() -> Path | None:
    """Where the processes sharing this SQLite file meet; None when in memory
    (or not SQLite). One directory per database file, so that sites sharing a
    cache directory (test runs) do not hear each other; short, for the
    sockets' paths (below)."""
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        return None
    digest = hashlib.sha256(str(Path(name).resolve()).encode()).hexdigest()[:8]
    return Path(settings.CACHE_DIR) / "live" / digest


def socket_name() -> str:
    """This process's socket in the socket directory: random, not the pid, which
    processes in other pid namespaces (containers) sharing the directory reuse."""
    return f"{secrets.token_hex(4)}.sock"


# A Unix socket's path (sun_path) holds at most 108 bytes with its terminating
# NUL: the cache directory may be 107 - len("/live/01234567/01234567.sock") = 79.
LONGEST_SOCKET_PATH = 107
LONGEST_SOCKET_NAME = len("01234567.sock")


class Postman:
    """Datagrams to every process's socket, kept and retried until taken."""

    RETRY_SECONDS = 0.02
    CHANGES_PER_DATAGRAM = 200  # ~10 KB: far below the socket's send buffer

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # path -> key (a game, an account) -> the latest change of it
        self._backlog: dict[str, dict] = {}
        self._pending = threading.Event()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def send(self, directory: Path, change: Change | AccountChanged) -> None:
        with self._lock:
            for path in directory.glob("*.sock"):
                waiting = self._backlog.get(str(path))
                if waiting is not None:  # keep the order: after what waits
                    waiting[change.key] = change.merged(waiting.get(change.key))
                    continue
                waiting = {change.key: change}
                if not self._flush(str(path), waiting):
                    self._backlog[str(path)] = waiting
            if self._backlog:
                self._start_retrying()

    def _flush(self, path: str, waiting: dict) -> bool:
        """Send what waits for `path`; True when nothing is left to send."""
        if self._socket is None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._socket.setblocking(False)
        while waiting:
            batch = list(waiting.values())[: self.CHANGES_PER_DATAGRAM]
            try:
                self._socket.sendto(encode(batch).encode(), path)
            except BlockingIOError:
                return False  # the receiver's queue is full: retry later
            except (ConnectionRefusedError, FileNotFoundError):
                Path(path).unlink(missing_ok=True)  # its process is gone
                waiting.clear()
                return True
            except OSError:
                logger.warning("live update to %s delayed", path, exc_info=True)
                return False
            for change in batch:
                del waiting[change.key]
        return True

    def _start_retrying(self) -> None:
        self._pending.set()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._retry, name="live-postman", daemon=True
            )
            self._thread.start()

    def _retry(self) -> None:
        while True:
            self._pending.wait()
            time.sleep(self.RETRY_SECONDS)  # give the receivers time to read
            with self._lock:
                for path, waiting in list(self._backlog.items()):
                    if self._flush(path, waiting):
                        del self._backlog[path]
                if not self._backlog:
                    self._pending.clear()


postman = Postman()


async def listen(
    path: Path, deliver: Callable[[bytes], None]
) -> asyncio.DatagramTransport:
    """Bind this process's socket at `path` (in the socket directory) and hand
    each datagram it receives to `deliver`, on the running event loop."""

    class Receiver(asyncio.DatagramProtocol):
        def datagram_received(self, data, addr):
            deliver(data)

    private_dirs.make(path.parent)
    if found := private_dirs.problems(path.parent, root=settings.CACHE_DIR):
        raise PermissionError(f"not a private directory: {'; '.join(found)}")
    # Bound here: uvloop takes a ready socket but not a Unix local_addr.
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        Receiver, sock=sock
    )
    return transport
