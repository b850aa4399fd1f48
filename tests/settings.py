"""Test settings: the project's settings with fast password hashing."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key-not-for-production")

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

# Sessions of this test run only: a fresh directory (the file-based session cache
# of settings.py), removed at exit.
if not REDIS_URL:  # noqa: F405
    SESSIONS_DIR = tempfile.mkdtemp(prefix="ttt-test-sessions-")
    CACHES["sessions"]["LOCATION"] = SESSIONS_DIR  # noqa: F405
    atexit.register(shutil.rmtree, SESSIONS_DIR, ignore_errors=True)
