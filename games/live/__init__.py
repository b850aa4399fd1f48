"""Live updates: who must hear that a game changed, and how it travels.

The Django side calls one function: `publish_on_commit(change)`, with a
`Change` (a game's id, its new version, whose lobbies care, whether the open
games changed) from games.signals, or an `AccountChanged` (a user whose
sessions may have ended) from games.live.accounts and accounts.user_sessions.
After commit, every server process hears it through the broker in use; the
`Hub` of each process wakes the streams that care, and each stream tells its
browser the new version to fetch.

The modules, in the order a change crosses them:

- `changes`: `Change`, `AccountChanged`;
- `wire`: their JSON encoding, the same on every broker;
- `brokers/`: `redis_pubsub` (REDIS_URL set: several hosts, any database),
  `postgres_notify` (PostgreSQL's LISTEN/NOTIFY), `datagrams` (a SQLite file:
  Unix sockets between the processes of one host); with an in-memory
  database (tests) a change goes straight to this process's hub;
- `outages`: one log line when Redis or PostgreSQL goes and one when it is
  back; the listeners' reconnect pace;
- `hub`: the `Hub` of each process (its open streams, by game and by lobby
  user, and their keep-alive pings); `listeners`: its broker listener and the
  database catch-up; `subscribers`: `Subscriber` (one stream), `Coalescer`
  (lobby refreshes at most once a second); `rechecks`: the streams' sessions
  re-checked after a notice;
- `streams`: the SSE stream handler, reached from tictactoe_site.server.asgi
  before Django (the `.../events/` entries of games.urls are placeholders for
  `{% url %}`);
- `sessions`: whom a stream's session cookie logs in, as Django's middleware
  would decide;
- `accounts`: the receivers that publish an `AccountChanged` on logout,
  password change, deactivation or deletion.

A game's change is published by games.signals, beside the game's signals:
the services call one function there per change.
"""

import functools
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from .brokers import datagrams, postgres_notify, redis_pubsub
from .changes import AccountChanged, Change
from .hub import hub as process_hub  # games.live.hub stays the module

__all__ = ["AccountChanged", "Change", "publish", "publish_on_commit"]


def publish_on_commit(
    change: Change | AccountChanged, *, using: str | None = None
) -> None:
    """Tell every server process about `change` once the transaction in
    progress on `using` commits (at once outside a transaction); nothing if
    it rolls back."""
    transaction.on_commit(lambda: publish(change), using=using)


def publish(change: Change | AccountChanged) -> None:
    """Tell every server process now, through the broker in use. Runs in the
    request's thread, after commit."""
    # What the choice of broker depends on (tests change it within a process).
    configuration = (
        settings.REDIS_URL,
        connection.vendor,
        connection.settings_dict["NAME"],
        settings.CACHE_DIR,
    )
    _publisher(configuration)(change)


type Publisher = Callable[[Change | AccountChanged], None]


@functools.cache
def _publisher(configuration: tuple) -> Publisher:
    """The publishing side of the broker in use with `configuration`, chosen
    once for it: not every broker asked whether it is in use on every publish."""
    if settings.REDIS_URL:
        return functools.partial(redis_pubsub.publish, settings.REDIS_URL)
    if postgres_notify.in_use():
        return postgres_notify.publish
    directory = datagrams.socket_directory()
    if directory is None:  # an in-memory database: straight to this process
        return process_hub.deliver_threadsafe
    return functools.partial(_by_datagrams, directory)


def _by_datagrams(directory: Path, change: Change | AccountChanged) -> None:
    """A SQLite file: to the socket of every server process sharing it, or,
    while none listens (none made the directory), to this process's hub."""
    if directory.is_dir():
        datagrams.postman.send(directory, change)
    else:
        process_hub.deliver_threadsafe(change)
