"""Whom a live stream's session cookie logs in, decided as Django's middleware
would for a page: the session engine and `auth.get_user` (an expired or deleted
session, an inactive user or a changed password log nobody in).

Synchronous (they read the session cache and the database): the streams call
them in a thread, never on the event loop.
"""

from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from django.db import close_old_connections
from django.http import HttpRequest


def logged_in_user(session_key: str | None):
    """The user the session logs in, or AnonymousUser."""
    request = HttpRequest()
    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(session_key)
    return get_user(request)


def logged_in_user_id(session_key: str | None) -> int | None:
    user = logged_in_user(session_key)
    return user.pk if user.is_authenticated else None


def lapsed(sessions: dict[str, int]) -> set[str]:
    """The session keys of `sessions` (key -> the user id a stream was opened
    as) that no longer log that user in."""
    close_old_connections()
    try:
        return {
            key
            for key, user_id in sessions.items()
            if logged_in_user_id(key) != user_id
        }
    finally:
        close_old_connections()
