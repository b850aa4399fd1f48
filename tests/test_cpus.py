"""tictactoe_site.cpus: each server process on a CPU of its own."""

import os
import sys
import threading

import pytest

from tictactoe_site import cpus

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="CPU affinity per thread is Linux's"
)


def test_each_claim_takes_the_lowest_free_slot(tmp_path):
    # flock() locks belong to an open file, so two opens in one process
    # conflict exactly as two processes do.
    first, first_lock = cpus.claim_slot(tmp_path)
    second, second_lock = cpus.claim_slot(tmp_path)
    third, third_lock = cpus.claim_slot(tmp_path)
    assert (first, second, third) == (0, 1, 2)

    second_lock.close()  # its process ended
    again, again_lock = cpus.claim_slot(tmp_path)
    fourth, fourth_lock = cpus.claim_slot(tmp_path)
    assert (again, fourth) == (1, 3)
    for lock in (first_lock, third_lock, again_lock, fourth_lock):
        lock.close()


def in_a_thread(work):
    """`work()` in a fresh thread (CPU affinity is per thread: the test's own
    thread stays as it was); what it returned."""
    result = {}
    thread = threading.Thread(target=lambda: result.update(value=work()))
    thread.start()
    thread.join(timeout=30)
    return result["value"]


def test_a_pinned_thread_and_the_threads_it_starts_run_on_its_slots_cpu(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    held, held_lock = cpus.claim_slot(tmp_path)  # another server process
    assert held == 0

    def pin_then_start_a_thread():
        cpu = cpus.pin_to_own_cpu(tmp_path)
        mine = os.sched_getaffinity(0)
        started = in_a_thread(lambda: os.sched_getaffinity(0))
        cpus.unpin_thread()
        return cpu, mine, started, os.sched_getaffinity(0)

    cpu, mine, started, unpinned = in_a_thread(pin_then_start_a_thread)
    expected = allowed[1] if len(allowed) > 1 else allowed[0]  # slot 1
    assert (cpu, mine, started) == (expected, {expected}, {expected})
    assert unpinned == set(allowed)
    held_lock.close()
