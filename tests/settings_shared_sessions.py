"""tests.settings with the session cache where production keeps it with SQLite,
in DJANGO_CACHE_DIR: for server processes that must share it, as `make serve`'s
do (tests.settings gives each process a directory of its own)."""

from .settings import *  # noqa: F403

CACHES["sessions"]["LOCATION"] = CACHE_DIR / "sessions"  # noqa: F405
