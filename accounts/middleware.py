"""When a logged-in player was last on the site, for the your-turn emails
(accounts.turn_emails: none to someone seen since the game began waiting) and,
for a guest, for housekeeping (no guest active lately is closed).

The database is written at most every `SEEN_EVERY` per player and server
process: one UPDATE of the player's TurnEmailPreference (none for a player
without one) and one of their Guest row (none for an account). Which players
were recorded lately is kept in the process's own memory (the "seen" cache), so
an ordinary page costs no query, no file and no change to the session. A login
counts as recorded: Django records it as `last_login` (a guest logs in once, as
the account is made, with its Guest row). The UPDATEs run after the response,
in a page thread (tictactoe_site.lib.deferred), so a page that only reads, on
the event loop, never waits for the database's write lock.
"""

import functools
from datetime import timedelta

from django.contrib.auth import SESSION_KEY
from django.core.cache import caches
from django.utils import timezone

from tictactoe_site.lib.deferred import defer

from .models import Guest, TurnEmailPreference

SEEN_EVERY = timedelta(minutes=5)
SEEN_CACHE = "seen"


def seen_key(user_id) -> str:
    return f"seen-{user_id}"


def stamp_login(sender, request, user, **kwargs) -> None:
    """user_logged_in: the player starts as just seen."""
    caches[SEEN_CACHE].set(seen_key(user.pk), True, SEEN_EVERY.total_seconds())


def record_seen(user_id, when) -> None:
    TurnEmailPreference.objects.filter(user_id=user_id).update(last_seen_at=when)
    # A guest's activity, which keeps housekeeping from closing the account.
    Guest.objects.filter(user_id=user_id).update(last_active_at=when)


def record_activity(get_response):
    def middleware(request):
        response = get_response(request)
        session = getattr(request, "session", None)
        # Only a page that read the session (a player's page; not /healthz, not
        # a static file): nothing to read otherwise, and nothing to vary on.
        if session is None or not session.accessed:
            return response
        user_id = session.get(SESSION_KEY)
        if user_id is None:
            return response
        if caches[SEEN_CACHE].add(seen_key(user_id), True, SEEN_EVERY.total_seconds()):
            defer(request, functools.partial(record_seen, user_id, timezone.now()))
        return response

    return middleware
