"""A checkout set up by `make run` is a development checkout: `manage.py` works there
with nothing exported, while `make serve` still refuses to start without a key and
the test suite ignores its .env.

Each test copies the project into a temporary directory (sharing this run's
.venv) and runs the real Makefile target and `manage.py` with a clean environment.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.processes, pytest.mark.no_database]

ROOT = Path(__file__).resolve().parents[2]
PROJECT_FILES = [
    "manage.py",
    "Makefile",
    "pyproject.toml",
    "requirements.lock",
    "tictactoe_site",
    "accounts",
    "games",
    "templates",
    "static",
]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the project, its .venv the one running these tests."""
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(source, tmp_path / name)
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    # The Makefile installs when pyproject.toml is newer than these stamps.
    (venv / ".installed").touch()
    (venv / ".installed-runtime").touch()
    return tmp_path


def clean_env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), **extra}


def run(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        cwd=cwd,
        env=clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def manage(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "manage.py", *args], checkout)


def test_manage_py_refuses_without_a_key_before_make_run(checkout):
    result = manage(checkout, "check")
    assert result.returncode == 1
    assert result.stderr == (
        "DJANGO_SECRET_KEY is not set. Set it to a long random value; for local "
        "development, run `make run` once (it writes .env with DJANGO_DEBUG=1).\n"
    )


def test_after_make_runs_setup_manage_py_works_with_nothing_exported(checkout):
    setup = run(["make", "--no-print-directory", ".env"], checkout)
    assert setup.returncode == 0, setup.stderr
    assert (checkout / ".env").read_text().splitlines()[-1] == "DJANGO_DEBUG=1"

    check = manage(checkout, "check")
    assert check.returncode == 0, check.stderr
    assert "System check identified no issues (0 silenced)." in check.stdout

    assert manage(checkout, "migrate", "--noinput").returncode == 0
    superuser = manage(
        checkout,
        "createsuperuser",
        "--noinput",
        "--username",
        "admin",
        "--email",
        "admin@example.com",
    )
    assert superuser.returncode == 0, superuser.stderr
    assert "Superuser created successfully." in superuser.stdout

    shell = manage(
        checkout,
        "shell",
        "-c",
        "from django.conf import settings; from django.contrib.auth.models import "
        "User; print(settings.DEBUG, User.objects.get().username)",
    )
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[-1] == "True admin"


@pytest.mark.parametrize(
    ("target", "does"),
    [
        ("serve", "runs the production server"),
        ("release", "prepares the production server"),
    ],
)
def test_production_targets_refuse_without_a_key_even_in_a_development_checkout(
    checkout, target, does
):
    (checkout / ".env").write_text("DJANGO_DEBUG=1\n")
    result = run(["make", "--no-print-directory", target], checkout)
    assert result.returncode == 2
    assert f"make {target} {does} and needs DJANGO_SECRET_KEY" in result.stderr


def test_the_environment_wins_over_the_development_env_file(checkout):
    """`make serve` exports DJANGO_DEBUG=0: a development .env cannot turn debug on."""
    (checkout / ".env").write_text("DJANGO_DEBUG=1\n")
    result = run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.DEBUG)",
        ],
        checkout,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="a-test-key",
        DJANGO_SITE_URL="https://ttt.example.com",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False"


# Settings tests a development .env would change: two through load_settings
# (tests/tictactoe_site/test_env.py), one through served.manage.
SETTINGS_TESTS = [
    "tests/tictactoe_site/test_env.py::test_the_settings_take_the_documented_defaults",
    "tests/tictactoe_site/test_secrets_files.py::test_the_settings_read_every_secret_from_a_file"
    "[DJANGO_EMAIL_HOST_PASSWORD]",
    "tests/served/test_deployment.py::"
    "test_check_deploy_is_clean_with_the_documented_production_variables",
]


def test_the_suite_ignores_the_env_file_that_manage_py_reads(
    checkout, tmp_path_factory
):
    """`make run`, then `make quick`: the tests see none of .env."""
    for name in ("tests", "docs"):
        shutil.copytree(
            ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy2(ROOT / "README.md", checkout / "README.md")
    (checkout / ".env").write_text(
        "DJANGO_DEBUG=1\n"
        "DJANGO_SECURE_COOKIES=1\n"
        "DJANGO_SITE_URL=http://example.invalid\n"
        f"DATABASE_URL=sqlite:///{checkout}/development.sqlite3\n"
    )

    shell = manage(
        checkout,
        "shell",
        "-c",
        "from django.conf import settings; print(settings.DEBUG, "
        "settings.SESSION_COOKIE_SECURE, settings.SITE_URL, "
        "settings.DATABASES['default']['NAME'])",
    )
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[-1] == (
        f"True True http://example.invalid {checkout}/development.sqlite3"
    )

    basetemp = tmp_path_factory.mktemp("inner") / "tmp"
    suite = run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider"]
        + ["--basetemp", str(basetemp), *SETTINGS_TESTS],
        checkout,
    )
    assert suite.returncode == 0, suite.stdout
    assert suite.stdout.splitlines()[-1].startswith("3 passed in ")
