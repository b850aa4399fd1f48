"""tests.settings with the session cache where production keeps it with SQLite,
in DJANGO_CACHE_DIR: for server processes that must share it, as `make serve`'s
do (tests.settings gives each process a cache in its memory)."""

from .settings import *  # noqa: F403

CACHES["sessions"] = {  # noqa: F405
    "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
    "LOCATION": CACHE_DIR / "sessions",  # noqa: F405
    "OPTIONS": {"MAX_ENTRIES": 100_000},
}
