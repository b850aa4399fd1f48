"""When a logged-in player was last on the site, for the your-turn emails
(accounts.turn_emails: none to someone seen since the game began waiting).

No query on an ordinary page: the session (which the page reads anyway) holds
when the player was last recorded, and the database is written only when that
is `SEEN_EVERY` old, one UPDATE of the player's TurnEmailPreference (none for a
player without one). A login stamps the session (`stamp_login`): the login
itself is recorded as `last_login`; a session older than the stamp gets one on
its first page, without a write.
"""

from datetime import timedelta

from django.contrib.auth import SESSION_KEY
from django.utils import timezone

from .models import TurnEmailPreference

SEEN_EVERY = timedelta(minutes=5)
SEEN_KEY = "accounts_seen_at"


def stamp_login(sender, request, user, **kwargs) -> None:
    """user_logged_in: the session starts as just seen."""
    if hasattr(request, "session"):
        request.session[SEEN_KEY] = timezone.now().timestamp()


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
        now = timezone.now()
        seen = session.get(SEEN_KEY)
        if seen is None:
            # A session from before the stamp existed: start counting, no write
            # (the first pages of many such sessions at once stay reads).
            session[SEEN_KEY] = now.timestamp()
        elif now.timestamp() - seen >= SEEN_EVERY.total_seconds():
            TurnEmailPreference.objects.filter(user_id=user_id).update(last_seen_at=now)
            session[SEEN_KEY] = now.timestamp()
        return response

    return middleware
