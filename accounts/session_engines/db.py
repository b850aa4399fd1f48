"""Sessions read from the database on every request (PostgreSQL)."""

from django.contrib.sessions.backends import db

from . import KeyFollowingStore


class SessionStore(KeyFollowingStore, db.SessionStore):
    pass
