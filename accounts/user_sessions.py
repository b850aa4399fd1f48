"""Your signed-in browsers: allauth.usersessions records each login (when, the
client address as accounts.client sees it, the browser); the account page lists
those that still log you in and ends them, one or all but this one.

Listing asks the database twice whatever the number of browsers: the recorded
logins, then their sessions' rows, whose data says whether they still log the
user in (allauth's `purge_and_list` loads each session and its user, two reads
per browser). With either session engine (cached_db with SQLite, db with
PostgreSQL) the database holds every live session.

Ending a session tells the apps (accounts.signals.sessions_ended: games.live
tells every server process, as a logout or a password change does), so that
its live streams end at once.

A session whose key changes (Django's cycle_key: Keep this account, the admin's
form for another's password, a session signed under a fallback secret key)
stays listed under its new key: accounts.session_engines.
"""

from dataclasses import dataclass
from datetime import datetime

from allauth.usersessions.adapter import DefaultUserSessionsAdapter
from allauth.usersessions.models import UserSession
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from .signals import sessions_ended

# The address of a session signed in before the list was kept (accounts
# migration 0003): it was never recorded.
UNRECORDED_ADDRESS = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class Browser:
    id: int
    signed_in_at: datetime
    ip: str | None  # None: not recorded
    user_agent: str
    is_current: bool


def _logs_in(data: dict, user) -> bool:
    """What django.contrib.auth.get_user decides for a session's data, without
    loading the user again: the same user, and a hash of their password as it
    is now (or under a fallback secret key)."""
    if data.get(SESSION_KEY) != str(user.pk) or BACKEND_SESSION_KEY not in data:
        return False
    stored = data.get(HASH_SESSION_KEY) or ""
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(stored, hashed) for hashed in hashes)


def signed_in(user, current_key: str | None) -> list[Browser]:
    """`user`'s browsers still logged in, this one first, then newest first."""
    recorded = list(
        UserSession.objects.filter(user=user).values_list(
            "id", "session_key", "created_at", "ip", "user_agent"
        )
    )
    decode = SessionStore().decode
    live_data = {
        key: decode(data)
        for key, data in Session.objects.filter(
            session_key__in=[row[1] for row in recorded],
            expire_date__gt=timezone.now(),
        ).values_list("session_key", "session_data")
    }
    browsers = [
        Browser(
            pk,
            created_at,
            None if ip == UNRECORDED_ADDRESS else ip,
            agent,
            key == current_key,
        )
        for pk, key, created_at, ip, agent in recorded
        if key in live_data and _logs_in(live_data[key], user)
    ]
    browsers.sort(key=lambda b: (not b.is_current, -b.signed_in_at.timestamp()))
    return browsers


class UserSessionsAdapter(DefaultUserSessionsAdapter):
    def end_sessions(self, sessions) -> None:
        """allauth's, then the users' live streams check their sessions again."""
        sessions = list(sessions)
        super().end_sessions(sessions)
        user_ids = {session.user_id for session in sessions}
        sessions_ended.send(sender=UserSession, user_ids=user_ids)
