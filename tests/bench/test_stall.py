"""tests/bench/stall.py: a short run against the served app reports every phase,
with every move's event heard and every request answered as expected."""

import pytest

from tests.bench import stall
from tests.support.served import free_port, fresh_database

pytestmark = pytest.mark.processes


def test_a_short_run_reports_each_phase_with_every_event_heard(tmp_path):
    with fresh_database(tmp_path, "stall", migrated=True) as url:
        phases = stall.measure(
            stall.ROOT, url, duration=2, port=free_port(), workdir=tmp_path
        )
    assert [phase["phase"] for phase in phases] == [
        "quiet",
        "+ 2 logins/s",
        "+ a reset every 5 s",
    ]
    for phase in phases:
        assert phase["unexpected"] == {}
        assert (phase["moves"], phase["events"]["count"], phase["missed"]) == (
            20,
            20,
            0,
        )
        assert phase["pages"]["count"] > 0
    assert [phase["logins"].get("count", 0) for phase in phases] == [0, 4, 4]
    assert [phase["resets"].get("count", 0) for phase in phases] == [0, 0, 1]
