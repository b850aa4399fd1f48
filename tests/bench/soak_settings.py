"""The soak's settings (tests/bench/soak.py): the project's, with sessions that
expire after a minute, so that within a run of minutes the heartbeat's
housekeeping (every 15 s) has expired sessions to delete, as over weeks in
production."""

from tictactoe_site.settings import *  # noqa: F403

SESSION_COOKIE_AGE = 60  # seconds; the soak's KEPT["sessions"]

# Each process's own caches fill up to their MAX_ENTRIES, which at the soak's
# load takes longer than its warm-up (a 60-minute run grew 20 % until its page
# caches were full, after 36 minutes, then held). Small here, so that they are
# full within the warm-up and the rest of the run shows what grows past them.
CACHES["pages"]["OPTIONS"] = {"MAX_ENTRIES": 100}  # noqa: F405
CACHES["pictures"]["OPTIONS"] = {"MAX_ENTRIES": 20}  # noqa: F405
CACHES["seen"]["OPTIONS"] = {"MAX_ENTRIES": 100}  # noqa: F405
