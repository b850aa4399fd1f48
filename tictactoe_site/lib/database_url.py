"""DATABASE_URL as Django's DATABASES entry, through dj-database-url, with
libpq's multi-host form besides: `postgres://USER@HOST1:5432,HOST2:5432/DB
?target_session_attrs=read-write` names a primary and its standbys, and libpq
(psycopg) connects to whichever of them is the primary (docs/deploying.md). The
hosts reach psycopg as libpq's comma lists in HOST and PORT, so the pool, the
live listener, `migrate`'s lock and `backup` all find the primary the same way.

A URL it cannot read stops the start with a message that names the variable and
never repeats the URL (it may carry a password).
"""

from urllib.parse import unquote, urlsplit, urlunsplit

import dj_database_url

from .env import ConfigurationError, env_secret

POSTGRES_ENGINES = (
    "django.db.backends.postgresql",
    "django.contrib.gis.db.backends.postgis",
)
# Stands for the hosts while dj-database-url reads the rest of the URL.
PLACEHOLDER = "hosts.invalid"


def database_from_url(name: str, default: str, **options) -> dict:
    """The DATABASES entry of the URL in the variable `name` (or `name`_FILE;
    `default` when unset); `options` as dj_database_url.parse takes them."""
    url = env_secret(name).strip() or default
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced bracket
        raise _unreadable(name) from None
    credentials, at, hosts = parts.netloc.rpartition("@")
    if "," not in hosts:
        return _parse(name, url, options)
    pairs = [_host_and_port(name, item) for item in hosts.split(",")]
    single = urlunsplit(parts._replace(netloc=f"{credentials}{at}{PLACEHOLDER}"))
    database = _parse(name, single, options)
    if database["ENGINE"] not in POSTGRES_ENGINES:
        raise ConfigurationError(
            f"{name} names several hosts, which only a PostgreSQL URL may do."
        )
    database["HOST"] = ",".join(host for host, _ in pairs)
    ports = [port for _, port in pairs]
    database["PORT"] = ",".join(ports) if any(ports) else ""
    return database


def _parse(name: str, url: str, options: dict) -> dict:
    try:
        return dj_database_url.parse(url, **options)
    except ValueError:  # dj_database_url.ParseError, an unknown scheme
        raise _unreadable(name) from None


def _unreadable(name: str) -> ConfigurationError:
    return ConfigurationError(
        f"{name} is not a database URL Django can use: write it as "
        "scheme://user:password@host:port/name, its parts percent-encoded "
        "(docs/settings.md)."
    )


def _host_and_port(name: str, item: str) -> tuple[str, str]:
    """One `host[:port]` of a multi-host URL (an IPv6 address in brackets)."""
    host, port = item, ""
    if item.startswith("["):
        address, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ConfigurationError(f"{name} names a host it cannot read: {item!r}.")
        host, port = address, rest[1:]
    elif ":" in item:
        host, _, port = item.rpartition(":")
    host = unquote(host)
    if not host:
        raise ConfigurationError(
            f"{name} lists an empty host: write HOST1:PORT1,HOST2:PORT2."
        )
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ConfigurationError(
            f"{name} gives host {host} the port {port!r}: a port is a number "
            "from 1 to 65535."
        )
    return host, port
