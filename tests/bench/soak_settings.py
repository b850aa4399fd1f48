"""The soak's settings (tests/bench/soak.py): the project's, with sessions that
expire after a minute, so that within a run of minutes the heartbeat's
housekeeping (every 15 s) has expired sessions to delete, as over weeks in
production."""

from tictactoe_site.settings import *  # noqa: F403

SESSION_COOKIE_AGE = 60  # seconds; the soak's KEPT["sessions"]
