"""/metrics on an idle host: every series whose labels are known in advance is
there at 0 from the first scrape (dashboards read 0, not "no data"), in-process
and added up over the real server's processes; every metric docs/operations.md
lists is there with its documented type; and the scrape passes `promtool check
metrics` (Debian's `prometheus` package: without it these tests skip, unless
PROMTOOL_REQUIRED=1, set by .ci/run, makes that a failure).
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

from ..support.fleet import wait_for
from ..support.served import serving
from .test_metrics import scrape, values

ROOT = Path(__file__).resolve().parents[2]
PROMTOOL = "/usr/bin/promtool"

# The labelled series an idle host exports, as docs/operations.md names them.
KNOWN = {
    "tictactoe_rate_limited_total": (
        "route",
        [
            "new_game",
            "abort_game",
            "invitation_guest",
            "join_game_as_guest",
            "account_login",
            "account_reauthenticate",
            "account_close",
            "account_reset_password",
            "account_email",
            "game_events",
            "lobby_events",
        ],
    ),
    "tictactoe_stream_answers_total": (
        "status",
        ["200", "400", "403", "404", "429", "503"],
    ),
    "tictactoe_streams_open": ("kind", ["game", "lobby"]),
    "tictactoe_live_events_sent_total": ("kind", ["game", "lobby"]),
    "tictactoe_mails_total": ("outcome", ["sent", "retried", "given_up", "failed"]),
    "tictactoe_db_pool_connections": ("state", ["in_use", "idle"]),
}
KNOWN_SERIES = {
    (name, ((label, value),))
    for name, (label, known) in KNOWN.items()
    for value in known
}
# Sampled from the pool (PostgreSQL), or counted as each process starts.
NOT_ZERO_WHEN_IDLE = {
    "tictactoe_db_pool_connections",
    "tictactoe_db_pool_max_connections",
    "tictactoe_live_resyncs_total",
}
# | `tictactoe_moves_total` | counter | ... ; a row may name two metrics.
ROW = re.compile(r"^\| (`tictactoe_[^|]+) \| (counter|gauge|histogram) \|", re.M)


def documented() -> dict[str, str]:
    """{metric name: type} of the metrics table in docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text()
    return {
        name: kind
        for names, kind in ROW.findall(text)
        for name in re.findall(r"`(tictactoe_\w+)`", names)
    }


def promtool_check(text: str) -> subprocess.CompletedProcess:
    if not Path(PROMTOOL).exists():
        reason = (
            "promtool checks the scrape: sudo apt-get install prometheus "
            "(then stop the prometheus service it may start)"
        )
        if os.environ.get("PROMTOOL_REQUIRED") == "1":
            pytest.fail(f"{reason} (PROMTOOL_REQUIRED=1)")
        pytest.skip(reason)
    return subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
    )


def operator_scrape(client) -> str:
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    return response.content.decode()


def test_the_docs_list_metrics_with_known_labels():
    """The table this file holds the scrape to is the one it finds."""
    table = documented()
    assert set(KNOWN) < set(table)
    assert table["tictactoe_db_pool_wait_seconds_total"] == "counter"  # a row's second
    assert table["tictactoe_request_duration_seconds"] == "histogram"


@pytest.mark.django_db
def test_every_documented_metric_and_known_label_is_in_a_scrape(client):
    text = operator_scrape(client)
    for name, kind in documented().items():
        assert f"\n# TYPE {name} {kind}\n" in text
    assert set(values(text)) >= KNOWN_SERIES


@pytest.mark.django_db
@pytest.mark.processes
def test_a_scrape_passes_promtool(client):
    checked = promtool_check(operator_scrape(client))
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")


@pytest.mark.processes
def test_an_idle_server_exports_every_known_series_at_zero(tmp_path):
    """The processes' own files, added up: nothing has been asked of the host
    but its readiness (not counted), once its task worker has taken the first
    heartbeat, which its start queues."""
    with serving(tmp_path, "metrics-idle", workers=2) as app:
        wait_for(
            lambda: app.browser().get("/workerz").status == 200,
            "the task worker's first heartbeat",
        )
        status, text = scrape(app.port)
    assert status == 200
    found = values(text)
    assert set(found) >= KNOWN_SERIES
    zero = {
        key: 0.0
        for key in found
        if key[0] not in NOT_ZERO_WHEN_IDLE and not key[0].endswith("_created")
    }
    assert {key: found[key] for key in zero} == zero
    # Each documented metric but the pages' (a route's first request makes them).
    pages = {"tictactoe_requests_total", "tictactoe_request_duration_seconds"}
    for name, kind in documented().items():
        if name not in pages:
            assert f"\n# TYPE {name} {kind}\n" in text
    checked = promtool_check(text)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
