"""One CPU for each server process (Linux; WEB_PIN_CPUS, on by default).

A page thread and the event loop of one process take turns at Python's
interpreter lock, and every system call a page makes (a database round trip,
reading the session file, each random byte of the CSRF mask) hands the lock
over while another thread waits for it. When the two threads run on different
CPUs, each hand-over wakes the other CPU: a game page in a page thread cost
about a quarter more CPU than under gunicorn's single-threaded workers, measured
on PostgreSQL, where every page runs in a thread (docs/performance.md). Only one
of those threads can run Python at a time anyway, so the process loses nothing
by keeping them on one CPU, and the hand-overs become cheap.

Each process claims the lowest free slot (an exclusive lock on a file in
`lock_dir`, held for the life of the process and released by the kernel when it
ends, so a restarted process takes its predecessor's CPU) and runs on CPU
`slot mod the CPUs it may use`. Account threads, whose password hashing runs
without the interpreter lock, go back to every CPU (`unpin_thread`).
"""

import fcntl
import itertools
import os
from pathlib import Path
from typing import IO

# The slot's lock file, open for the life of the process: closing it would
# release the slot.
_claimed: list = []
# The CPUs the process could use before it pinned itself.
_all_cpus: set[int] = set()


def pinning_available() -> bool:
    return hasattr(os, "sched_setaffinity")


def pin_to_own_cpu(lock_dir: Path) -> int | None:
    """Pin the calling thread, and the threads it starts from now on, to the CPU
    of this process's slot; that CPU (None where the platform cannot pin)."""
    if not pinning_available():
        return None
    cpus = sorted(os.sched_getaffinity(0))
    _all_cpus.update(cpus)
    lock_dir.mkdir(parents=True, exist_ok=True)
    slot, lock = claim_slot(lock_dir)
    _claimed.append(lock)
    cpu = cpus[slot % len(cpus)]
    os.sched_setaffinity(0, {cpu})
    return cpu


def claim_slot(lock_dir: Path) -> tuple[int, IO]:
    """The lowest slot nobody holds, and its lock file: the slot is held until
    that file is closed (or its process ends)."""
    for slot in itertools.count():
        lock = (lock_dir / f"slot-{slot}.lock").open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        return slot, lock
    raise AssertionError("unreachable: itertools.count() never ends")


def unpin_thread() -> None:
    """Let the calling thread run on every CPU the process could use."""
    if _all_cpus:
        os.sched_setaffinity(0, _all_cpus)
