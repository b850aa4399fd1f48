"""Sessions read through the host's cache, written to the database (SQLite)."""

from django.contrib.sessions.backends import cached_db

from . import KeyFollowingStore


class SessionStore(KeyFollowingStore, cached_db.SessionStore):
    pass
