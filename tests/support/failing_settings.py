"""The tests' settings with a page that fails (tests/support/failing_urls.py),
for the error-report tests (tests/tictactoe_site/test_sentry.py)."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.support.failing_urls"
