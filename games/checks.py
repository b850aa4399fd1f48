"""System checks for what the settings leave to the machine: they run before
`migrate`, so `make serve` stops with the reason instead of failing requests."""

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.checks import Error, Tags, register

FILE_CACHE = "django.core.cache.backends.filebased.FileBasedCache"


@register(Tags.caches)
def session_cache_is_writable(app_configs, **kwargs) -> list[Error]:
    """Sessions are cached in files (settings.CACHES["sessions"], no REDIS_URL):
    a directory the server cannot write would fail every logged-in request."""
    cache = settings.CACHES[settings.SESSION_CACHE_ALIAS]
    if cache["BACKEND"] != FILE_CACHE:
        return []
    directory = Path(cache["LOCATION"])
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return [
            Error(
                f"The session cache directory {directory} cannot be written "
                f"({exc.strerror}).",
                hint="Set DJANGO_CACHE_DIR to a directory the server may write, "
                "or REDIS_URL to keep sessions in Redis (README, Configuration).",
                id="games.E001",
            )
        ]
    return []
