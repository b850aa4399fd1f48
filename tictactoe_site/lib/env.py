"""Configuration from environment variables (docs/settings.md).

Each helper reads one variable. Unset, empty or only spaces: the default.
Anything else it does not understand stops the start with a ConfigurationError
that names the variable and what it takes: `DJANGO_SECURE_COOKIES=ture` is a
mistake to report, not "off". The entry points (manage.py,
`python -m tictactoe_site.server.serve`, `python -m tictactoe_site.jobs.worker`)
report it as one line through `reports_configuration_errors`, not as a traceback.

A secret (`env_secret`: keys, passwords, URLs that carry a password) may instead
come from a file, as container platforms mount them: `X_FILE=/run/secrets/x`
reads X from that file (without the line break at its end). Setting both X and
X_FILE, or naming a file that cannot be read, stops the start.
"""

import functools
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class ConfigurationError(ImproperlyConfigured):
    """The environment asks for something the site cannot run with."""


def _value(name: str) -> str | None:
    return os.environ.get(name, "").strip() or None


def env_str(name: str, default: str = "") -> str:
    return _value(name) or default


def env_secret(name: str) -> str:
    """A password or key, exactly as given: spaces at either end are part of it.
    Or the content of the file `<name>_FILE` names, without its final line
    break (`echo key > file` writes one)."""
    file_name = f"{name}_FILE"
    path = _value(file_name)
    if path is None:
        return os.environ.get(name, "")
    if os.environ.get(name, "").strip():
        raise ConfigurationError(
            f"{name} and {file_name} are both set: set one of them (the file "
            f"holds the value of {name})."
        )
    try:
        content = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        reason = error.strerror or str(error)
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    else:
        return content.removesuffix("\n").removesuffix("\r")
    raise ConfigurationError(
        f"{file_name} names {path}, which cannot be read: {reason}."
    )


def env_secret_list(name: str) -> list[str]:
    """Secrets separated by commas (or, in a file, by lines); empty items are
    dropped."""
    items = env_secret(name).replace("\n", ",").split(",")
    return [item.strip() for item in items if item.strip()]


def env_list(name: str, default: Sequence[str] = ()) -> list[str]:
    """Comma-separated values; empty items are dropped."""
    value = _value(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    value = _value(name)
    return Path(value) if value else default


def env_choice(name: str, default: str, choices: Sequence[str]) -> str:
    value = _value(name)
    if value is None:
        return default
    if value not in choices:
        raise ConfigurationError(
            f"{name} must be one of {', '.join(choices)}, not {value!r}."
        )
    return value


def env_bool(name: str, default: bool = False) -> bool:
    """On or off, in any case; a value that is neither is refused."""
    value = _value(name)
    if value is None:
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise ConfigurationError(
        f"{name} must be {', '.join(TRUE[:-1])} or {TRUE[-1]} to turn it on, or "
        f"{', '.join(FALSE[:-1])} or {FALSE[-1]} to turn it off; not {value!r}."
    )


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    value = _value(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigurationError(
            f"{name} must be a whole number, not {value!r}."
        ) from None
    if minimum is not None and number < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum}, not {number}.")
    if maximum is not None and number > maximum:
        raise ConfigurationError(f"{name} must be at most {maximum}, not {number}.")
    return number


def env_float(name: str, default: float, *, above: float | None = None) -> float:
    """A finite number; `above` is a bound the value must exceed (e.g. 0 for a
    duration that cannot be zero)."""
    value = _value(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ConfigurationError(f"{name} must be a number, not {value!r}.")
    if above is not None and number <= above:
        raise ConfigurationError(f"{name} must be more than {above}, not {value}.")
    return number


def reports_configuration_errors(main: Callable[[], None]) -> Callable[[], None]:
    """An entry point: a ConfigurationError ends the process with exit status 1
    and its message as one line on stderr, for the operator to fix."""

    @functools.wraps(main)
    def run() -> None:
        try:
            main()
        except ConfigurationError as error:
            sys.exit(str(error))

    return run
