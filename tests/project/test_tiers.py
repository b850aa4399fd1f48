"""tests/support/tiers.py: a test that starts a process without
@pytest.mark.processes fails, a marked one runs, and `-m "not processes"` (make
quick) leaves the marked one out. Run in a pytest of its own on a sample module."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.processes, pytest.mark.no_database]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = """
import subprocess
import sys

import pytest


def test_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.processes
def test_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_in_process():
    pass
"""


def sample_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.tiers", "-p", "no:django"]
        + ["-p", "no:cacheprovider", "-q", "-rf", *args, "test_sample.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_unmarked_test_that_starts_a_process_fails_and_says_why(tmp_path):
    result = sample_run(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "1 failed, 2 passed" in result.stdout
    assert (
        "RuntimeError: test_sample.py::test_unmarked starts a process "
        "(subprocess.Popen) without @pytest.mark.processes: mark it, so that make "
        "quick leaves it out (tests/support/tiers.py)"
    ) in result.stdout


def test_the_quick_tier_leaves_the_marked_test_out(tmp_path):
    result = sample_run(tmp_path, "-m", "not processes")
    assert "1 failed, 1 passed, 1 deselected" in result.stdout
