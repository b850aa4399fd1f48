"""Streams end with their session across real server processes, on every broker
(SQLite's local sockets, PostgreSQL NOTIFY, Redis), as if on two hosts: a logout
through one process, and a deactivation from another program (the shell, as an
admin would), end the streams another process holds, within one ping interval.
"""

import pytest

from games.live.brokers.postgres_notify import CHANNEL
from games.live.hub import KEEPALIVE_SECONDS

from ..support import hosts
from ..support.asgi import BOUND
from ..support.hosts import EVERY_BROKER, Watcher

pytestmark = pytest.mark.processes

# No task worker beside each server (`make serve` starts one): these tests
# enqueue no task they wait for, and each worker is one more Django process.
NO_TASK_WORKER = {"TASK_WORKERS": "0"}


def _log_out(port: int, session: str) -> int:
    """POST /accounts/logout/ as the browser's form would; returns the status."""
    return hosts.post_form(port, "/accounts/logout/", session, {})


def _ends(watcher: Watcher) -> bool:
    """Whether the stream ends within one ping interval (events before it are
    skipped)."""
    while True:
        kind, _ = watcher.next(timeout=KEEPALIVE_SECONDS)
        if kind != "id":
            return kind == "end"


DEACTIVATE = (
    "from django.contrib.auth import get_user_model;"
    "user = get_user_model().objects.get(username='carol');"
    "user.is_active = False;"
    "user.save()"
)


@EVERY_BROKER
def test_a_logout_or_deactivation_elsewhere_ends_the_streams_of_a_process(
    backend, tmp_path
):
    # The servers and the shell share the sockets' directory (SQLite), and the
    # servers their session cache (files, or Redis), as `make serve`'s do.
    backend = backend | {"DJANGO_CACHE_DIR": str(tmp_path / "cache")}
    shared = {"DJANGO_SETTINGS_MODULE": "tests.settings_shared_sessions"}
    with hosts.serving(backend, 2, **shared, **NO_TASK_WORKER) as (ports, _):
        sessions, games = hosts.games(backend, 1)
        [(game_id, version)] = games.items()
        watched = [f"/games/{game_id}/events/?v={version}", "/lobby/events/"]
        watchers = {
            name: [Watcher(ports[0], path, sessions[name]) for path in watched]
            for name in ("bob", "carol", "alice")
        }
        for watcher in (w for group in watchers.values() for w in group):
            assert watcher.next() == ("status", 200)

        assert _log_out(ports[1], sessions["bob"]) == 302
        assert [_ends(watcher) for watcher in watchers["bob"]] == [True, True]

        hosts.manage(backend, "shell", "-c", DEACTIVATE)
        assert [_ends(watcher) for watcher in watchers["carol"]] == [True, True]

        # alice's streams were left open: her game's stream still takes news.
        assert hosts.play(ports[1], sessions["alice"], game_id, 1, 1, 0) == 302
        assert watchers["alice"][0].next() == ("id", version + 1)
        for watcher in watchers["alice"]:
            watcher.close()


QUIETLY_DEACTIVATE = (
    "from django.contrib.auth import get_user_model;"
    "get_user_model().objects.filter(username='carol').update(is_active=False)"
)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_process_that_lost_its_broker_rechecks_every_stream_when_back(backend):
    """A notice can be missed while a listener is away; here, a change that
    sends none at all (QuerySet.update skips the model's signals): the
    listener's reconnect re-checks every open stream's session."""
    import psycopg

    with hosts.serving(backend, 1, **NO_TASK_WORKER) as (ports, _):
        sessions, _ = hosts.games(backend, 1)
        watchers = {
            name: Watcher(ports[0], "/lobby/events/", sessions[name])
            for name in ("carol", "alice")
        }
        for watcher in watchers.values():
            assert watcher.next() == ("status", 200)
        hosts.manage(backend, "shell", "-c", QUIETLY_DEACTIVATE)
        with psycopg.connect(backend["DATABASE_URL"], autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query = %s",
                [f"LISTEN {CHANNEL}"],
            ).fetchall()
        assert killed == [(True,)]
        assert watchers["carol"].next(timeout=BOUND) == ("end", None)
        assert watchers["alice"].found.empty()
        watchers["alice"].close()
