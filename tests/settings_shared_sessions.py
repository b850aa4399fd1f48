"""tests.settings with the session cache where production keeps it, in
DJANGO_CACHE_DIR (without REDIS_URL): for server processes that must share it,
as `make serve`'s do (tests.settings gives each process a directory of its own)."""

from .settings import *  # noqa: F403

if not REDIS_URL:  # noqa: F405
    CACHES["sessions"]["LOCATION"] = CACHE_DIR / "sessions"  # noqa: F405
