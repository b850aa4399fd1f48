"""Test settings: the project's settings with fast password hashing."""

import os

# Never the checkout's .env (`make run` writes one), here or in what the tests
# start with this environment or these settings.
os.environ["PYTHON_DOTENV_DISABLED"] = "1"
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key-not-for-production")
# Debug is off, so the site must say its address: the test client's.
os.environ.setdefault("DJANGO_SITE_URL", "http://testserver")

from tictactoe_site.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGGING["loggers"]["games"]["level"] = "INFO"  # noqa: F405
# Serve static files from their sources (no collectstatic before the tests), and
# do not warn that STATIC_ROOT does not exist.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# Sessions are read from a cache in each test process's memory, on PostgreSQL as
# on SQLite (settings.py's cached_db): the tests count each page's own queries,
# the same on both engines. Production's PostgreSQL reads every session from the
# database instead (one query more per request), as the served tests run it
# (tests/served/test_sessions.py: two hosts). Not production's file cache: it
# lists its whole directory on every write, and a run writes thousands of
# sessions (tests/tictactoe_site/test_csrf.py with test_usersessions.py: 11.5
# CPU-s with files, 9.5 in memory). No culling: a session culled mid-test would
# cost its page one query more than the tests count.
CACHES["sessions"] = {  # noqa: F405
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "sessions",
    "OPTIONS": {"MAX_ENTRIES": 100_000},
}
SESSION_ENGINE = "accounts.session_engines.cached_db"
SESSION_CACHE_ALIAS = "sessions"
