"""The suite's tiers: what `make quick` leaves out and what `make test` runs alone.

- `@pytest.mark.processes`: the test starts other processes (a served app, a
  browser, nginx, a redis-server, manage.py). `make quick` leaves these out
  (`-m "not processes"`) and runs the rest, every in-process test, on every
  core. The audit hook below fails a test that starts a process without the
  mark, so the quick tier cannot quietly grow slow.
- `@pytest.mark.timing`: the test measures how long something takes between
  processes (a live event while a password is hashed, a p95 through nginx).
  `make test` runs these after the rest, one at a time, so that no other
  test's load is in their figures (`-m timing` without xdist).

A plugin: pyproject.toml's addopts load it (`-p tests.support.tiers`), so the
hook is in place before any test module is imported; tests/project/test_tiers.py
tests it.
"""

import os
import shutil
import sys
import tempfile
from collections import Counter

import pytest
from hypothesis import is_hypothesis_test

MARKERS = {
    "processes": "starts other processes (a served app, a browser, nginx...); "
    "left out of make quick",
    "timing": "measures time across processes; make test runs it alone, after the rest",
}
# The audit events that start a process (subprocess, multiprocessing, asyncio).
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork"})

_current: list = []  # the test item running in this process, if any


def _on_audit(event: str, args: tuple) -> None:
    if event not in PROCESS_EVENTS or not _current:
        return
    item = _current[0]
    if item.get_closest_marker("processes") is None:
        _current.clear()  # raise once: the test's own cleanup may start more
        raise RuntimeError(
            f"{item.nodeid} starts a process ({event}) without "
            "@pytest.mark.processes: mark it, so that make quick leaves it out "
            "(tests/support/tiers.py)"
        )


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    sys.addaudithook(_on_audit)
    if config.getoption("numprocesses", None) and not config.option.basetemp:
        # Each xdist worker's temporary directories sit one level deeper
        # (popen-gw0/); a served app's cache directory under them must stay
        # short enough for its sockets' paths (check games.E003: 79 bytes).
        config.option.basetemp = tempfile.mkdtemp(prefix="ttt-")
        config.add_cleanup(
            lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True)
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[:] = [item]
    try:
        return (yield)
    finally:
        _current.clear()


def pytest_collection_modifyitems(config, items):
    """Every browser test starts Chromium: tests/e2e is marked as a whole.
    The slow tests go first, so that the workers end on short in-process tests
    instead of one waiting for another's last long file; pytest-xdist keeps
    this order with `--no-loadscope-reorder` (pyproject.toml: by default it
    hands out the files with the most tests first, whatever their kind).
    Within a kind, the files with the most tests go first: the last files
    handed out are the shortest, so that the workers finish together."""
    e2e = os.path.join("tests", "e2e", "")
    for item in items:
        if e2e in str(item.path):
            item.add_marker("processes")
    sizes = Counter(item.path for item in items)
    items.sort(key=lambda item: (_slowness(item), -sizes[item.path]))


def _slowness(item) -> int:
    """0: starts processes; 1: a Hypothesis test (tens to hundreds of
    examples, seconds in all; a state machine run by hand carries the
    `hypothesis` mark); 2: the rest."""
    if item.get_closest_marker("processes") is not None:
        return 0
    if item.get_closest_marker("hypothesis") is not None:
        return 1
    return 1 if is_hypothesis_test(getattr(item, "obj", None)) else 2
