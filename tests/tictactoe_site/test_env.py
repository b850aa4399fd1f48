"""tictactoe_site.lib.env: configuration variables are read strictly. A value the site
does not understand stops the start with one line naming the variable and what
it takes; it never quietly means the default."""

import os
import re
import shutil
import signal
import subprocess
import sys
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

import pytest

from tictactoe_site.lib.env import (
    ConfigurationError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_path,
    env_secret,
    env_str,
    reports_configuration_errors,
)

from ..support.readme import configuration_defaults
from ..support.served import NO_DOT_ENV, ROOT, free_port

VAR = "TTT_TEST_VARIABLE"
ON_OFF = (
    "must be 1, true, yes or on to turn it on, or 0, false, no or off to turn it "
    "off; not {value!r}."
)


@pytest.fixture
def env(monkeypatch):
    """Set VAR (None: unset it)."""

    def set_to(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv(VAR, raising=False)
        else:
            monkeypatch.setenv(VAR, value)

    return set_to


def refusal(read) -> str:
    with pytest.raises(ConfigurationError) as raised:
        read()
    return str(raised.value)


# -- on/off --------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["1", "true", "yes", "on", "TRUE", "Yes", "On", " on "]
)
def test_bool_on(env, value):
    env(value)
    assert env_bool(VAR) is True


@pytest.mark.parametrize(
    "value", ["0", "false", "no", "off", "FALSE", "No", "OFF", " 0 "]
)
def test_bool_off(env, value):
    env(value)
    assert env_bool(VAR, default=True) is False


@pytest.mark.parametrize("value", [None, "", "   "])
def test_bool_unset_or_empty_is_the_default(env, value):
    env(value)
    assert env_bool(VAR) is False
    assert env_bool(VAR, default=True) is True


@pytest.mark.parametrize("value", ["ture", "2", "y", "n", "enabled", "-1", "o n"])
def test_bool_refuses_anything_else(env, value):
    env(value)
    assert refusal(lambda: env_bool(VAR)) == f"{VAR} " + ON_OFF.format(value=value)
    assert refusal(lambda: env_bool(VAR, default=True)).endswith(f"not {value!r}.")


# -- whole numbers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"), [("42", 42), (" 7 ", 7), ("0", 0), ("-3", -3)]
)
def test_int(env, value, number):
    env(value)
    assert env_int(VAR, 5) == number


@pytest.mark.parametrize("value", [None, "", " "])
def test_int_unset_or_empty_is_the_default(env, value):
    env(value)
    assert env_int(VAR, 5) == 5


@pytest.mark.parametrize("value", ["abc", "4.5", "1e3", "0x10", "8000 8001", "five"])
def test_int_refuses_what_is_not_a_whole_number(env, value):
    env(value)
    assert refusal(lambda: env_int(VAR, 5)) == (
        f"{VAR} must be a whole number, not {value!r}."
    )


def test_int_bounds(env):
    env("1")
    assert env_int(VAR, 5, minimum=1, maximum=65535) == 1
    env("65535")
    assert env_int(VAR, 5, minimum=1, maximum=65535) == 65535
    env("0")
    assert refusal(lambda: env_int(VAR, 5, minimum=1, maximum=65535)) == (
        f"{VAR} must be at least 1, not 0."
    )
    env("65536")
    assert refusal(lambda: env_int(VAR, 5, minimum=1, maximum=65535)) == (
        f"{VAR} must be at most 65535, not 65536."
    )


# -- numbers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"), [("0.25", 0.25), ("3", 3.0), (" 1.5 ", 1.5), ("2e-1", 0.2)]
)
def test_float(env, value, number):
    env(value)
    assert env_float(VAR, 9.0, above=0) == number


@pytest.mark.parametrize("value", [None, "", " "])
def test_float_unset_or_empty_is_the_default(env, value):
    env(value)
    assert env_float(VAR, 0.5) == 0.5


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-inf", "1,5", "0.5s"])
def test_float_refuses_what_is_not_a_finite_number(env, value):
    env(value)
    assert refusal(lambda: env_float(VAR, 0.5)) == (
        f"{VAR} must be a number, not {value!r}."
    )


@pytest.mark.parametrize("value", ["0", "0.0", "-1"])
def test_float_above(env, value):
    env(value)
    assert refusal(lambda: env_float(VAR, 0.5, above=0)) == (
        f"{VAR} must be more than 0, not {value}."
    )


# -- strings, lists, paths, choices --------------------------------------------


def test_str(env):
    env(None)
    assert env_str(VAR) == ""
    assert env_str(VAR, "fallback") == "fallback"
    env("")
    assert env_str(VAR, "fallback") == "fallback"
    env("  redis://cache:6379/0 ")
    assert env_str(VAR, "fallback") == "redis://cache:6379/0"


def test_a_secret_is_taken_exactly_as_given(env):
    env(None)
    assert env_secret(VAR) == ""
    env(" pass word ")
    assert env_secret(VAR) == " pass word "


def test_list(env):
    env(None)
    assert env_list(VAR, ["127.0.0.1", "localhost"]) == ["127.0.0.1", "localhost"]
    assert env_list(VAR) == []
    env("")
    assert env_list(VAR, ["localhost"]) == ["localhost"]
    env(" a.example , b.example,, ,c.example ")
    assert env_list(VAR, ["localhost"]) == ["a.example", "b.example", "c.example"]


def test_path(env):
    env(None)
    assert env_path(VAR, Path("/srv/default")) == Path("/srv/default")
    env(" ")
    assert env_path(VAR, Path("/srv/default")) == Path("/srv/default")
    env("/var/cache/tictactoe")
    assert env_path(VAR, Path("/srv/default")) == Path("/var/cache/tictactoe")


def test_choice(env):
    levels = ["DEBUG", "INFO", "WARNING"]
    env(None)
    assert env_choice(VAR, "INFO", levels) == "INFO"
    env("WARNING")
    assert env_choice(VAR, "INFO", levels) == "WARNING"
    env("info")
    assert refusal(lambda: env_choice(VAR, "INFO", levels)) == (
        f"{VAR} must be one of DEBUG, INFO, WARNING, not 'info'."
    )


# -- how an entry point reports them -------------------------------------------


def test_an_entry_point_exits_with_the_message_alone():
    @reports_configuration_errors
    def main():
        raise ConfigurationError("PORT must be a whole number, not 'abc'.")

    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == "PORT must be a whole number, not 'abc'."


def test_other_errors_keep_their_traceback():
    @reports_configuration_errors
    def main():
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        main()


# -- every documented variable -------------------------------------------------

DEFAULTS = configuration_defaults()


def documented() -> dict[str, str]:
    """Each variable of docs/settings.md's tables: "on/off", "number" or
    "text", from its default."""
    return {
        name: "on/off"
        if default in ("on", "off")
        else "number"
        if re.fullmatch(r"\d+(\.\d+)?", default)
        else "text"
        for name, default in DEFAULTS.items()
    }


def documented_value(name: str) -> bool | float:
    """The default docs/settings.md writes for `name`, as a value: on/off or a
    number."""
    default = DEFAULTS[name]
    if default in ("on", "off"):
        return default == "on"
    return float(default)


DOCUMENTED = documented()
BAD = {"on/off": "ture", "number": "abc"}
# Read by the server and the worker before they load the settings.
SERVER_VARIABLES = {
    "PORT",
    "WEB_CONCURRENCY",
    "WEB_MAX_CONNECTIONS",
    "TASK_WORKERS",
    "WEB_RELOAD",
    "WEB_ACCESS_LOG",
    "DJANGO_DEBUG_ON_PUBLIC_ADDRESS",
}
WORKER_VARIABLES = {"TASK_POLL_SECONDS"}
# Every branch that reads a variable: PostgreSQL with the pool, SMTP (debug off).
SETTINGS_ENV = {
    "DJANGO_SECRET_KEY": "env-test-secret",
    "DJANGO_SITE_URL": "https://ttt.example.com",
    "DATABASE_URL": "postgres://app@db.internal:5432/ttt",
}


def test_the_table_is_read():
    assert DOCUMENTED["DJANGO_SECURE_COOKIES"] == "on/off"
    assert DOCUMENTED["DJANGO_DB_POOL_MAX"] == "number"
    assert DOCUMENTED["PORT"] == "number"
    assert DOCUMENTED["HOST"] == "text"
    assert DOCUMENTED["TASK_POLL_SECONDS"] == "number"
    assert len(DOCUMENTED) == 69


def load_settings(monkeypatch, root: Path = ROOT, **env: str) -> dict:
    """The settings module of the checkout at `root`, run afresh with only `env`
    (and the documented variables cleared)."""
    for name in DOCUMENTED:
        monkeypatch.delenv(name, raising=False)
    for name, value in {**SETTINGS_ENV, **env}.items():
        monkeypatch.setenv(name, value)
    spec = spec_from_file_location(
        "tictactoe_site.settings_under_test", root / "tictactoe_site" / "settings.py"
    )
    settings = module_from_spec(spec)
    spec.loader.exec_module(settings)
    return vars(settings)


def test_the_secret_key_is_kept_as_given_and_spaces_alone_are_no_key(monkeypatch):
    settings = load_settings(monkeypatch, DJANGO_SECRET_KEY=" key with spaces ")
    assert settings["SECRET_KEY"] == " key with spaces "
    with pytest.raises(ConfigurationError, match="DJANGO_SECRET_KEY is not set."):
        load_settings(monkeypatch, DJANGO_SECRET_KEY="   ")


SETTINGS_VARIABLES = sorted(
    name
    for name, kind in DOCUMENTED.items()
    if kind != "text" and name not in SERVER_VARIABLES | WORKER_VARIABLES
)


@pytest.mark.parametrize("name", SETTINGS_VARIABLES)
def test_the_settings_refuse_a_bad_value_of_every_variable(monkeypatch, name):
    bad = BAD[DOCUMENTED[name]]
    with pytest.raises(ConfigurationError, match=rf"^{name} must be .*not '{bad}'\.$"):
        load_settings(monkeypatch, **{name: bad})


def test_the_settings_take_the_documented_defaults(monkeypatch):
    settings = load_settings(monkeypatch)
    database = settings["DATABASES"]["default"]
    relay = settings["MAILERS"]["relay"]["OPTIONS"]
    settings_values = {
        "DJANGO_DEBUG": settings["DEBUG"],
        "DJANGO_DB_POOL_MIN": database["OPTIONS"]["pool"]["min_size"],
        "DJANGO_DB_POOL_MAX": database["OPTIONS"]["pool"]["max_size"],
        "DJANGO_DB_POOL_TIMEOUT": database["OPTIONS"]["pool"]["timeout"],
        "DJANGO_DB_CONNECT_TIMEOUT": database["OPTIONS"]["connect_timeout"],
        "WEB_THREADS": settings["WEB_THREADS"],
        "WEB_ACCOUNT_THREADS": settings["WEB_ACCOUNT_THREADS"],
        "WEB_PIN_CPUS": settings["WEB_PIN_CPUS"],
        "WEB_MAX_STREAMS_PER_USER": settings["WEB_MAX_STREAMS_PER_USER"],
        "DJANGO_SECURE_COOKIES": settings["SESSION_COOKIE_SECURE"],
        "DJANGO_SECURE_SSL_REDIRECT": settings["SECURE_SSL_REDIRECT"],
        "DJANGO_HSTS_SECONDS": settings["SECURE_HSTS_SECONDS"],
        "DJANGO_HSTS_INCLUDE_SUBDOMAINS": settings["SECURE_HSTS_INCLUDE_SUBDOMAINS"],
        "DJANGO_HSTS_PRELOAD": settings["SECURE_HSTS_PRELOAD"],
        "DJANGO_EMAIL_PORT": relay["port"],
        "DJANGO_EMAIL_USE_TLS": relay["use_tls"],
        "DJANGO_EMAIL_TIMEOUT": relay["timeout"],
        "DJANGO_PASSWORD_RESET_TIMEOUT": settings["PASSWORD_RESET_TIMEOUT"],
        "DJANGO_PASSWORD_RESET_LIMIT": settings["PASSWORD_RESET_LIMIT"],
        "DJANGO_LOGIN_FAILURE_LIMIT": settings["LOGIN_FAILURE_LIMIT"],
        "DJANGO_LOGIN_COOLOFF_MINUTES": settings["LOGIN_COOLOFF_MINUTES"],
        "DJANGO_TRUSTED_PROXY_COUNT": settings["TRUSTED_PROXY_COUNT"],
        "GAMES_MAX_OPEN_PER_USER": settings["GAMES_MAX_OPEN_PER_USER"],
        "GAMES_MAX_UNSTARTED_PER_USER": settings["GAMES_MAX_UNSTARTED_PER_USER"],
        "GAMES_MAX_UNSTARTED_PER_OPPONENT": settings[
            "GAMES_MAX_UNSTARTED_PER_OPPONENT"
        ],
        "GAMES_CREATE_ABORT_LIMIT": settings["GAMES_CREATE_ABORT_LIMIT"],
        "GAMES_TURN_EMAIL_AFTER": settings["GAMES_TURN_EMAIL_AFTER"],
        "GAMES_TURN_EMAIL_EVERY": settings["GAMES_TURN_EMAIL_EVERY"],
        "METRICS_ENABLED": settings["METRICS_ENABLED"],
        "GAMES_GUEST_CREATE_LIMIT": settings["GAMES_GUEST_CREATE_LIMIT"],
        "GAMES_GUEST_MAX_IDLE_DAYS": settings["GAMES_GUEST_MAX_IDLE_DAYS"],
    }
    # Each compared with docs/settings.md's own default for it, not a copy of it here.
    assert settings_values == {name: documented_value(name) for name in settings_values}


# `make run`'s .env, with more a developer may add to it.
DEVELOPMENT_DOT_ENV = {
    "DJANGO_DEBUG": "1",
    "DJANGO_SECURE_COOKIES": "1",
    "DJANGO_LOGIN_FAILURE_LIMIT": "50",
}


def test_the_settings_tests_ignore_the_dot_env_of_a_development_checkout(
    monkeypatch, tmp_path
):
    """`make run` leaves a .env beside the settings: the settings tests see none
    of it, while a developer's manage.py reads it."""
    (tmp_path / "tictactoe_site").mkdir()
    shutil.copy2(ROOT / "tictactoe_site" / "settings.py", tmp_path / "tictactoe_site")
    (tmp_path / ".env").write_text(
        "".join(f"{name}={value}\n" for name, value in DEVELOPMENT_DOT_ENV.items())
    )
    for name in DEVELOPMENT_DOT_ENV:  # unset now, and after the test if .env set it
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)

    def seen(settings: dict) -> tuple:
        names = ("DEBUG", "SESSION_COOKIE_SECURE", "LOGIN_FAILURE_LIMIT")
        return tuple(settings[name] for name in names)

    assert seen(load_settings(monkeypatch, root=tmp_path)) == (False, False, 5)
    monkeypatch.delenv("PYTHON_DOTENV_DISABLED")  # as in a developer's shell
    assert seen(load_settings(monkeypatch, root=tmp_path)) == (True, True, 50)


SQLITE = {"DATABASE_URL": "sqlite:////tmp/ttt-env-test.sqlite3"}
REDIS = {"REDIS_URL": "redis://127.0.0.1:6379/0"}


@pytest.mark.parametrize(
    ("env", "on_loop"),
    [
        ({}, False),  # PostgreSQL: every read is a round trip
        (REDIS, False),
        (SQLITE, True),
        (SQLITE | REDIS, True),  # Redis carries live notices, no reads
        (SQLITE | {"WEB_READS_ON_LOOP": "0"}, False),
    ],
)
def test_reads_run_on_the_loop_by_default_where_every_read_is_local(
    monkeypatch, env, on_loop
):
    assert load_settings(monkeypatch, **env)["WEB_READS_ON_LOOP"] is on_loop


@pytest.mark.parametrize("env", [{}, REDIS])
def test_reads_on_the_loop_are_refused_where_a_read_may_wait(monkeypatch, env):
    with pytest.raises(ConfigurationError) as refused:
        load_settings(monkeypatch, WEB_READS_ON_LOOP="1", **env)
    assert str(refused.value) == (
        "WEB_READS_ON_LOOP needs every read to be local: a SQLite database (reads "
        "from another machine would hold up the live streams)."
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"DJANGO_DB_POOL_MIN": "3", "DJANGO_DB_POOL_MAX": "2"},
            "DJANGO_DB_POOL_MAX must be at least 3, not 2.",
        ),
        ({"DJANGO_DB_POOL_MAX": "0"}, "DJANGO_DB_POOL_MAX must be at least 1, not 0."),
        ({"WEB_THREADS": "0"}, "WEB_THREADS must be at least 1, not 0."),
        ({"DJANGO_EMAIL_PORT": "0"}, "DJANGO_EMAIL_PORT must be at least 1, not 0."),
        (
            {"DJANGO_EMAIL_PORT": "65536"},
            "DJANGO_EMAIL_PORT must be at most 65535, not 65536.",
        ),
        (
            {"DJANGO_DB_POOL_TIMEOUT": "0"},
            "DJANGO_DB_POOL_TIMEOUT must be more than 0, not 0.",
        ),
        (
            {"DJANGO_TRUSTED_PROXY_COUNT": "-1"},
            "DJANGO_TRUSTED_PROXY_COUNT must be at least 0, not -1.",
        ),
        (
            {"GAMES_LOG_LEVEL": "verbose"},
            "GAMES_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, "
            "not 'verbose'.",
        ),
    ],
)
def test_the_settings_refuse_values_out_of_range(monkeypatch, env, message):
    assert refusal(lambda: load_settings(monkeypatch, **env)) == message


def test_limits_of_zero_turn_them_off(monkeypatch):
    settings = load_settings(
        monkeypatch, DJANGO_LOGIN_FAILURE_LIMIT="0", DJANGO_PASSWORD_RESET_LIMIT="0"
    )
    assert settings["ACCOUNT_RATE_LIMITS"] == {
        "login_failed": None,
        "login": None,
        "reset_password": None,
        "confirm_email": None,
    }


# -- the starts: one readable line, no server ----------------------------------


def start(module: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m module` with exactly `env` and a production-like base."""
    return subprocess.run(
        [sys.executable, "-m", module],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            **NO_DOT_ENV,
            "DJANGO_SECRET_KEY": "env-test-secret",
            "DJANGO_SITE_URL": "https://ttt.example.com",
            "HOST": "127.0.0.1",
            "PORT": str(free_port()),
            "WEB_CONCURRENCY": "1",
            "TASK_WORKERS": "0",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_refused(result, message: str) -> None:
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"{message}\n"


@pytest.mark.parametrize("name", sorted(SERVER_VARIABLES))
@pytest.mark.processes
def test_the_server_refuses_a_bad_value_of_its_variables(name):
    bad = BAD[DOCUMENTED[name]]
    result = start("tictactoe_site.server.serve", **{name: bad})
    message = {"on/off": ON_OFF, "number": "must be a whole number, not {value!r}."}
    assert_refused(result, f"{name} " + message[DOCUMENTED[name]].format(value=bad))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PORT", "-1", "PORT must be at least 0, not -1."),
        ("PORT", "65536", "PORT must be at most 65535, not 65536."),
        ("WEB_CONCURRENCY", "0", "WEB_CONCURRENCY must be at least 1, not 0."),
        ("WEB_MAX_CONNECTIONS", "0", "WEB_MAX_CONNECTIONS must be at least 1, not 0."),
        ("TASK_WORKERS", "-1", "TASK_WORKERS must be at least 0, not -1."),
        ("WEB_THREADS", "abc", "WEB_THREADS must be a whole number, not 'abc'."),
        ("DJANGO_SECURE_COOKIES", "ture", "DJANGO_SECURE_COOKIES " + ON_OFF),
    ],
)
@pytest.mark.processes
def test_the_server_refuses_values_out_of_range(name, value, message):
    result = start("tictactoe_site.server.serve", **{name: value})
    assert_refused(result, message.format(value=value))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "TASK_POLL_SECONDS must be a number, not 'abc'."),
        ("0", "TASK_POLL_SECONDS must be more than 0, not 0."),
    ],
)
@pytest.mark.processes
def test_the_worker_refuses_a_bad_poll_interval(value, message):
    assert_refused(
        start("tictactoe_site.jobs.worker", TASK_POLL_SECONDS=value), message
    )


def make_serve(tmp_path: Path, **env: str) -> tuple[int, str]:
    """`make serve` on a fresh SQLite file; killed, with what it started, if it
    is still running after the deadline (it would be serving)."""
    with subprocess.Popen(
        ["make", "--no-print-directory", f"PYTHON={sys.executable}", "serve"],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", str(tmp_path)),
            **NO_DOT_ENV,
            "DJANGO_SECRET_KEY": "env-test-secret",
            "DJANGO_SITE_URL": "https://ttt.example.com",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
            "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
            "PORT": str(free_port()),
            "WEB_CONCURRENCY": "1",
            "TASK_WORKERS": "0",
            **env,
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as make:
        try:
            _, stderr = make.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
            raise
    return make.returncode, stderr


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DJANGO_SECURE_COOKIES", "ture", "DJANGO_SECURE_COOKIES " + ON_OFF),
        ("WEB_THREADS", "abc", "WEB_THREADS must be a whole number, not {value!r}."),
    ],
)
@pytest.mark.processes
def test_make_serve_stops_at_once_with_one_readable_line(
    tmp_path, name, value, message
):
    returncode, stderr = make_serve(tmp_path, **{name: value})
    assert returncode != 0
    assert stderr.splitlines()[0] == message.format(value=value)
    assert "Traceback" not in stderr
    assert not (tmp_path / "db.sqlite3").exists()  # stopped before migrating
