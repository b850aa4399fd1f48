"""The open-file limit the server raises at start-up, and its warning."""

import resource
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tictactoe_site.server.limits import OVERHEAD, open_files_warning

ROOT = Path(__file__).resolve().parents[2]


def test_no_warning_when_the_limit_allows_the_connections():
    assert open_files_warning(10_100, 10_000) is None


def test_a_clear_warning_when_it_does_not():
    assert OVERHEAD == 100
    assert open_files_warning(1024, 10_000) == (
        "Open-file limit too low: each server process may open 1024 files, but "
        "WEB_MAX_CONNECTIONS=10000 needs 10100 (one per connection, live streams "
        "included, plus 100). Beyond about 924 connections a process refuses new "
        "ones. Raise the hard limit (systemd: LimitNOFILE=; a shell: ulimit -Hn as "
        "root; Docker: --ulimit nofile=) or lower WEB_MAX_CONNECTIONS."
    )


def _in_a_process_with_soft_limit(soft: int, code: str) -> str:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        preexec_fn=lower,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.processes
def test_the_soft_limit_is_raised_to_the_hard_one():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    code = (
        "import resource;"
        "from tictactoe_site.server.limits import raise_open_files_limit;"
        "print(raise_open_files_limit(), *resource.getrlimit(resource.RLIMIT_NOFILE))"
    )
    assert _in_a_process_with_soft_limit(256, code) == f"{hard} {hard} {hard}"


@pytest.mark.processes
def test_the_server_warns_at_start_up_when_the_hard_limit_is_too_low(tmp_path):
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 600))

    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PORT": "0",
        "WEB_MAX_CONNECTIONS": "5000",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "tictactoe_site.server.serve"],
        cwd=ROOT,
        env=env,
        preexec_fn=lower,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The warning comes first, before uvicorn's own start-up lines.
        readable, _, _ = select.select([server.stdout], [], [], 60)
        first = server.stdout.readline() if readable else "(nothing in 60 s)"
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert first.startswith(
        "WARNING:  Open-file limit too low: each server process may open 600 files, "
        "but WEB_MAX_CONNECTIONS=5000 needs 5100"
    ), first
