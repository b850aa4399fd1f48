"""tictactoe_site.server.cpus: each server process on a CPU of its own."""

import os
import subprocess
import sys
import threading

import pytest

from tictactoe_site.server import cpus

from ..support.served import ROOT

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="CPU affinity per thread is Linux's"
)

# A server process, as far as pinning goes: it pins itself, says where, and
# stays until its stdin closes.
SERVER_PROCESS = """
import sys
from pathlib import Path
from tictactoe_site.server import cpus
print(cpus.pin_to_own_cpu(Path(sys.argv[1])), flush=True)
sys.stdin.read()
"""


def start_sibling(lock_path) -> tuple[subprocess.Popen, int]:
    """A child of this test process (so a sibling of the others), once pinned."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER_PROCESS, str(lock_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return process, int(process.stdout.readline())


@pytest.mark.processes
@pytest.mark.no_database
def test_siblings_spread_over_the_cpus_and_a_restart_takes_the_cpu_left(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    lock_path = tmp_path / "cpus.lock"
    processes = []
    try:
        for _ in range(3):
            processes.append(start_sibling(lock_path))
        assert [cpu for _, cpu in processes] == [
            allowed[0],
            allowed[1 % len(allowed)],
            allowed[2 % len(allowed)],
        ]

        # The second dies; the process started in its place takes its CPU.
        died, _ = processes.pop(1)
        died.kill()
        died.wait(timeout=30)
        processes.append(start_sibling(lock_path))
        assert processes[-1][1] == allowed[1 % len(allowed)]
    finally:
        for process, _ in processes:
            process.stdin.close()
            process.wait(timeout=30)


def test_a_pinned_thread_and_the_threads_it_starts_keep_to_its_cpu(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    result = {}

    def a_server_process():
        result["cpu"] = cpus.pin_to_own_cpu(tmp_path / "cpus.lock")
        result["mine"] = os.sched_getaffinity(0)
        started = threading.Thread(
            target=lambda: result.update(started=os.sched_getaffinity(0))
        )
        started.start()
        started.join(timeout=30)
        cpus.unpin_thread()
        result["unpinned"] = os.sched_getaffinity(0)

    # Affinity belongs to a thread: the test's own stays as it was.
    thread = threading.Thread(target=a_server_process)
    thread.start()
    thread.join(timeout=30)
    assert result == {
        "cpu": allowed[0],  # this test process has no pinned children
        "mine": {allowed[0]},
        "started": {allowed[0]},
        "unpinned": set(allowed),
    }
