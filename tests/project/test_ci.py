"""`make test` runs both database passes whatever the environment holds, and
.ci/run fails unless both ran (.ci/check_test_reports.py reads their reports).

The Makefile runs for real in a copy of the project whose `.venv/bin/python` is a
stand-in: it logs each call (with the DATABASE_URL it got), answers the
PostgreSQL probe, and writes the JUnit report pytest would.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.checkout import stand_in_checkout

pytestmark = [pytest.mark.processes, pytest.mark.no_database]

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / ".ci" / "check_test_reports.py"
REPORTS = "artifacts/test-reports"
POSTGRES = "postgres://postgres@pg.invalid:5432/tictactoe_ci"


def junit(tests: int, skipped: int = 0, failures: int = 0, errors: int = 0) -> str:
    return (
        f'<testsuites><testsuite tests="{tests}" skipped="{skipped}" '
        f'failures="{failures}" errors="{errors}"/></testsuites>'
    )


STAND_IN = f"""#!/bin/sh
printf '%s|%s\\n' "${{DATABASE_URL-(unset)}}" "$*" >> "$RUNS_LOG"
case "$1" in
  -c) [ -z "$POSTGRES_DOWN" ] ;;
  -m) case "$3" in --junitxml=*)
        report="${{3#--junitxml=}}"; mkdir -p "${{report%/*}}"
        echo '{junit(3, skipped=1)}' > "$report" ;;
      esac ;;
esac
"""
PASSING = junit(5)
# Each pass: every test but the timing ones on every core, then those alone.
PARALLEL = "-n auto --dist loadfile -m not timing"


@pytest.fixture
def checkout(tmp_path) -> Path:
    stand_in_checkout(tmp_path, STAND_IN)
    (tmp_path / ".venv" / ".installed").touch()  # newer than pyproject.toml
    return tmp_path


def make_test(checkout: Path, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    """`make test` in `checkout` with only PATH, HOME and `env` exported (no
    MAKEFLAGS of an outer make); the stand-in's calls as (DATABASE_URL, args)."""
    log = checkout / "runs.log"
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "test",
            "NPM=",
            f"TEST_POSTGRES_URL={POSTGRES}",
        ],
        cwd=checkout,
        env={"PATH": os.environ["PATH"], "HOME": str(checkout), "RUNS_LOG": str(log)}
        | env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    calls = [line.split("|", 1) for line in log.read_text().splitlines()]
    return done, [(url, args) for url, args in calls if args.startswith("-m pytest")]


def check_reports(checkout: Path, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHECK), *(f"{REPORTS}/{name}" for name in names)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_make_test_runs_both_passes_whatever_database_url_holds(checkout):
    done, passes = make_test(checkout, DATABASE_URL="postgres://db.example/other")
    assert done.returncode == 0, done.stderr
    assert passes == [
        ("(unset)", f"-m pytest --junitxml={REPORTS}/sqlite.xml {PARALLEL}"),
        ("(unset)", f"-m pytest --junitxml={REPORTS}/sqlite-timing.xml -m timing"),
        (POSTGRES, f"-m pytest --junitxml={REPORTS}/postgresql.xml {PARALLEL}"),
        (POSTGRES, f"-m pytest --junitxml={REPORTS}/postgresql-timing.xml -m timing"),
    ]
    assert "make test ignores DATABASE_URL: SQLite, then TEST_POSTGRES_URL" in (
        done.stdout
    )
    reports = ("sqlite.xml", "sqlite-timing.xml", "postgresql.xml")
    checked = check_reports(checkout, *reports, "postgresql-timing.xml")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines() == [
        f"{REPORTS}/sqlite.xml: 2 tests ran, all passed",
        f"{REPORTS}/sqlite-timing.xml: 2 tests ran, all passed",
        f"{REPORTS}/postgresql.xml: 2 tests ran, all passed",
        f"{REPORTS}/postgresql-timing.xml: 2 tests ran, all passed",
    ]


def test_ci_fails_when_the_postgresql_pass_did_not_run(checkout):
    """A report of an earlier run cannot stand in for a pass that did not run."""
    stale = checkout / REPORTS / "postgresql.xml"
    stale.parent.mkdir(parents=True)
    stale.write_text(PASSING)
    done, passes = make_test(checkout, POSTGRES_DOWN="1")
    assert done.returncode == 0, done.stderr
    assert [url for url, _ in passes] == ["(unset)", "(unset)"]
    assert "ran the SQLite pass only" in done.stdout
    assert not stale.exists()
    checked = check_reports(checkout, "sqlite.xml", "postgresql.xml")
    assert checked.returncode == 1
    assert checked.stderr.splitlines() == [
        f"{REPORTS}/postgresql.xml: no report: that pass of make test did not run"
    ]

    required, _ = make_test(checkout, POSTGRES_DOWN="1", REQUIRE_POSTGRES="1")
    assert required.returncode != 0
    assert f"PostgreSQL does not answer at {POSTGRES} (REQUIRE_POSTGRES=1)" in (
        required.stderr
    )


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        (junit(4, skipped=4), "no test ran"),
        (junit(0), "no test ran"),
        (junit(9, failures=2, errors=1), "2 failed, 1 errors"),
        ("<testsuites><testsuite", "not a readable JUnit report"),
    ],
    ids=["all-skipped", "no-tests", "failures", "unreadable"],
)
def test_a_report_without_passing_tests_fails_ci(tmp_path, report, problem):
    (tmp_path / REPORTS).mkdir(parents=True)
    (tmp_path / REPORTS / "sqlite.xml").write_text(PASSING)
    (tmp_path / REPORTS / "postgresql.xml").write_text(report)
    checked = check_reports(tmp_path, "sqlite.xml", "postgresql.xml")
    assert checked.returncode == 1
    assert checked.stderr.startswith(f"{REPORTS}/postgresql.xml: {problem}")


def install_section(
    tmp_path: Path, *, nginx: bool, promtool: bool = True
) -> subprocess.CompletedProcess:
    """.ci/run's browser and fleet section (up to its closing rule), on a machine
    where both browsers and npm are there and nginx and promtool are there or not
    (their paths moved into `tmp_path`), `apt-get` a stand-in logging its
    arguments; then the variables the section exported."""
    script = (ROOT / ".ci" / "run").read_text()
    start = script.index("# --- Browser and fleet tests")
    end = script.index("# -----", start)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/apt.log\n')
    apt.chmod(0o755)
    # Both browsers' paths begin with /usr/bin/chromium.
    chromium = bin_dir / "chromium"
    shutil.copy2(apt, chromium)
    shutil.copy2(apt, bin_dir / "chromium-headless-shell")
    shutil.copy2(apt, bin_dir / "npm")
    nginx_path = tmp_path / "sbin" / "nginx"
    if nginx:
        nginx_path.parent.mkdir()
        shutil.copy2(apt, nginx_path)
    promtool_path = tmp_path / "promtool"
    if promtool:
        shutil.copy2(apt, promtool_path)
    section = (
        script[start:end]
        .replace("/usr/bin/chromium", str(chromium))
        .replace("/usr/sbin/nginx", str(nginx_path))
        .replace("/usr/bin/promtool", str(promtool_path))
        .replace("sudo=$(", "sudo= # $(")  # as root: no sudo
    )
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", section + "env\n"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_ci_installs_nginx_and_requires_the_fleet_tests(tmp_path):
    done = install_section(tmp_path, nginx=False)
    assert done.returncode == 0, done.stderr
    assert {"E2E_REQUIRED=1", "FLEET_REQUIRED=1", "PROMTOOL_REQUIRED=1"} <= set(
        done.stdout.splitlines()
    )
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q",
        "install -y -q nginx",
    ]


def test_ci_installs_promtool_and_requires_its_test(tmp_path):
    done = install_section(tmp_path, nginx=True, promtool=False)
    assert done.returncode == 0, done.stderr
    assert "PROMTOOL_REQUIRED=1" in done.stdout.splitlines()
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q",
        "install -y -q prometheus",
    ]


def test_ci_installs_nothing_that_is_there(tmp_path):
    done = install_section(tmp_path, nginx=True)
    assert done.returncode == 0, done.stderr
    assert "FLEET_REQUIRED=1" in done.stdout.splitlines()
    assert not (tmp_path / "apt.log").exists()
