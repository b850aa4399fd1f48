"""The floor: the project's settings (same middleware, database, templates) with a
bench-only URLconf, and Django's default database sessions, whatever the app uses:
the least any Django app pays to show a board."""

from tictactoe_site.settings import *  # noqa: F403

ROOT_URLCONF = "tests.bench.floor_urls"
SESSION_ENGINE = "django.contrib.sessions.backends.db"
LOGIN_URL = "/accounts/login/"  # the app's; the floor serves no login page
