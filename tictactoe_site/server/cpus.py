"""One CPU for each server process (Linux; WEB_PIN_CPUS, on by default).

A page thread and the event loop of one process take turns at Python's
interpreter lock, and every system call a page makes (a database round trip,
reading the session file, each random byte of the CSRF mask) hands the lock
over while another thread waits for it. When the two threads run on different
CPUs, each hand-over wakes the other CPU: on PostgreSQL, where every page runs
in a thread, a game page cost about a tenth to a quarter more CPU than under
gunicorn's single-threaded workers, and about as much as there once each
process kept to one CPU (docs/performance.md). Only one of those threads can
run Python at a time anyway, so the process loses little by keeping to one CPU.

Each server process takes the CPU that the fewest of its siblings (the other
processes of its server) are pinned to, deciding one at a time under a lock
file: the processes of one server spread over the CPUs, and a process started
again after one died takes the CPU its predecessor left. Account threads, whose
password hashing runs without the interpreter lock, go back to every CPU
(`unpin_thread`).
"""

import fcntl
import os
from collections import Counter
from pathlib import Path

# The CPUs the process could use before it pinned itself.
_all_cpus: set[int] = set()


def pin_to_own_cpu(lock_path: Path) -> int | None:
    """Pin the calling thread, and the threads it starts from now on, to the CPU
    the fewest of this process's siblings are pinned to (the lowest of those);
    that CPU, or None where the platform cannot pin. `lock_path`: the file whose
    lock makes the siblings choose one at a time."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    _all_cpus.update(cpus)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        taken = Counter(pinned_cpu(pid) for pid in siblings())
        cpu = min(cpus, key=lambda cpu: (taken[cpu], cpu))
        os.sched_setaffinity(0, {cpu})
    return cpu


def siblings() -> list[int]:
    """The other processes with this process's parent."""
    me, parent = os.getpid(), os.getppid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name, in parentheses, may hold spaces: split after it.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        pid = int(stat.parent.name)
        if int(fields[1]) == parent and pid != me:
            found.append(pid)
    return found


def pinned_cpu(pid: int) -> int | None:
    """The one CPU process `pid` is pinned to; None when it may use several, or
    has ended."""
    try:
        allowed = os.sched_getaffinity(pid)
    except OSError:
        return None
    return next(iter(allowed)) if len(allowed) == 1 else None


def unpin_thread() -> None:
    """Let the calling thread run on every CPU the process could use."""
    if _all_cpus:
        os.sched_setaffinity(0, _all_cpus)
