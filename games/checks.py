"""System checks for what the settings leave to the machine: they run before
`migrate`, so `make serve` stops with the reason instead of failing requests."""

import ipaddress
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from tictactoe_site.lib import private_dirs

from .live.brokers import datagrams

FILE_CACHE = "django.core.cache.backends.filebased.FileBasedCache"

PRIVATE_HINT = (
    "Whoever can write there can run code in every server process (the session "
    "cache holds pickles). Let only the server's user own and write it: chown it "
    "to that user and chmod go-w it, or set DJANGO_CACHE_DIR to a directory of "
    "its own (docs/settings.md)."
)


def _not_private(directory: Path, use: str) -> list[Error]:
    return [
        Error(
            f"The {use} directory is not private: {problem}.",
            hint=PRIVATE_HINT,
            id="games.E002",
        )
        for problem in private_dirs.problems(directory, root=settings.CACHE_DIR)
    ]


@register(Tags.caches, Tags.security)
def session_cache_is_writable(app_configs, **kwargs) -> list[Error]:
    """With SQLite, sessions are cached in files (settings.CACHES["sessions"]):
    a directory the server cannot write would fail every logged-in request;
    one another user can write would let them run code in the server."""
    cache = settings.CACHES.get("sessions")
    if cache is None or cache["BACKEND"] != FILE_CACHE:
        return []
    directory = Path(cache["LOCATION"])
    try:
        private_dirs.make(directory)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return [
            Error(
                f"The session cache directory {directory} cannot be written "
                f"({exc.strerror}).",
                hint="Set DJANGO_CACHE_DIR to a directory the server may write "
                "(docs/settings.md).",
                id="games.E001",
            )
        ]
    return _not_private(directory, "session cache")


@register(Tags.caches, Tags.security)
def live_socket_directory_is_private(app_configs, **kwargs) -> list[Error]:
    """With a SQLite file (and no REDIS_URL) the server processes send live
    updates to each other's Unix sockets in DJANGO_CACHE_DIR/live/."""
    if settings.REDIS_URL:
        return []
    directory = datagrams.socket_directory()
    if directory is None:
        return []
    longest = len(os.fsencode(directory / ("x" * datagrams.LONGEST_SOCKET_NAME)))
    if longest > datagrams.LONGEST_SOCKET_PATH:
        have = len(os.fsencode(settings.CACHE_DIR))
        most = have - (longest - datagrams.LONGEST_SOCKET_PATH)
        return [
            Error(
                f"The live-update sockets in {directory} would have paths of up "
                f"to {longest} bytes; a Unix socket's path holds at most "
                f"{datagrams.LONGEST_SOCKET_PATH}.",
                hint=f"Set DJANGO_CACHE_DIR to a path of at most {most} bytes "
                f"({settings.CACHE_DIR} has {have}).",
                id="games.E003",
            )
        ]
    try:
        private_dirs.make(directory)
    except OSError as exc:
        return [
            Error(
                f"The live-update socket directory {directory} cannot be created "
                f"({exc.strerror}).",
                hint="Set DJANGO_CACHE_DIR to a directory the server may write "
                "(docs/settings.md).",
                id="games.E004",
            )
        ]
    return _not_private(directory, "live-update socket")


def _on_this_host(host: str | None) -> bool:
    """localhost or a loopback address (no name is resolved: a name other than
    localhost counts as another host)."""
    if host is None or host == "localhost":
        return True  # no host: a Unix socket (unix://), or Redis's default
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@register(Tags.caches, Tags.security)
def redis_is_protected_off_this_host(app_configs, **kwargs) -> list[Warning]:
    """Redis carries the live notices (never a session): on another host it
    needs a password, and TLS against eavesdropping."""
    if not settings.REDIS_URL:
        return []
    url = urlsplit(settings.REDIS_URL)
    if url.scheme == "unix" or _on_this_host(url.hostname):
        return []
    hint = (
        "Give Redis a password (requirepass) and TLS, and say so in the URL: "
        "REDIS_URL=rediss://:password@host:6379/0 (docs/deploying.md)."
    )
    warnings = []
    if not url.password:
        warnings.append(
            Warning(
                f"REDIS_URL names another host ({url.hostname}) without a "
                "password: whoever reaches it can read the live notices (which "
                "games changed, who logged out) and flood every server process "
                "with false ones.",
                hint=hint,
                id="games.W001",
            )
        )
    if url.scheme != "rediss":
        warnings.append(
            Warning(
                f"REDIS_URL names another host ({url.hostname}) without TLS "
                "(redis://, not rediss://): live notices cross the network in "
                "clear.",
                hint=hint,
                id="games.W002",
            )
        )
    return warnings
