"""Where the processes of a host keep their metrics (tictactoe_site.ops.metrics).

prometheus_client's multiprocess mode: each process writes its counts to files
of its own in one directory, and a scrape, answered by any process, adds them
up. The library reads the directory from PROMETHEUS_MULTIPROC_DIR when it is
first imported, so `share` sets it before anything imports the library: the
server (tictactoe_site.server.serve) before it starts its processes, which inherit
it; a task worker run on its own (tictactoe_site.jobs.worker) before Django loads.
The directory is PROMETHEUS_MULTIPROC_DIR when set, else `metrics/` in
DJANGO_CACHE_DIR (private, as the rest of it: tictactoe_site.lib.private_dirs).

Every file names the process that writes it (`counter_<pid>.db`). When the
server starts, the files of processes that no longer run go: the counts start
again from zero, as a restarted process's do, while a worker under a process
manager that outlives the server keeps its own. The processes sharing the
directory must therefore share one process-id namespace (one host, one
container), as they share DJANGO_CACHE_DIR. Nothing here imports
prometheus_client.
"""

import os
import re
from pathlib import Path

from django.conf import settings

from tictactoe_site.lib import private_dirs
from tictactoe_site.lib.env import ConfigurationError

VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# counter_123.db, histogram_123.db, gauge_livesum_123.db
FILE = re.compile(r"[a-z]+(?:_[a-z]+)?_(\d+)\.db")


def directory() -> Path:
    configured = os.environ.get(VARIABLE, "").strip()
    return Path(configured) if configured else Path(settings.CACHE_DIR) / "metrics"


def share(*, server_start: bool) -> None:
    """Metrics on (METRICS_ENABLED): this process and the processes it starts
    count into the host's directory. `server_start`: first remove the files of
    processes that no longer run."""
    if not settings.METRICS_ENABLED:
        return
    path = directory()
    try:
        private_dirs.make(path)
    except OSError as exc:
        raise ConfigurationError(
            f"The metrics directory {path} cannot be made ({exc}): make "
            f"DJANGO_CACHE_DIR writable, set {VARIABLE}, or METRICS_ENABLED=0."
        ) from exc
    if server_start:
        for name, pid in process_files(path):
            if not is_running(pid):
                (path / name).unlink(missing_ok=True)
    os.environ[VARIABLE] = str(path)


def process_files(path: Path) -> list[tuple[str, int]]:
    """(file name, the id of the process that writes it) for each metrics file."""
    found = []
    for name in os.listdir(path):
        if match := FILE.fullmatch(name):
            found.append((name, int(match[1])))
    return found


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
