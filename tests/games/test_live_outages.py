"""games.live.outages: one log line when a service goes and one when it is
back, however many attempts meet it meanwhile. An attempt begun before the
service was last seen back (a publish or a listener's connection that was
already waiting when another thread reached Redis) tells nothing new when it
fails; an attempt begun after that is a new outage. The outage played for real,
with Redis killed under two servers, is tests/fleet/test_live_redis_outage.py."""

import logging
import time

import redis

from games.live.outages import Outage

SERVICE = "Redis at 192.0.2.1:6379"
REFUSED = redis.ConnectionError(
    "Error 111 connecting to 192.0.2.1:6379. Connection refused.\nmore"
)
GONE = (
    "live updates: Redis at 192.0.2.1:6379 unreachable (ConnectionError: Error 111 "
    "connecting to 192.0.2.1:6379. Connection refused.); streams catch up when it "
    "is back"
)
BACK = "live updates: Redis at 192.0.2.1:6379 is back"


def test_an_attempt_begun_before_the_service_came_back_logs_nothing(caplog):
    caplog.set_level(logging.WARNING, logger="games.live")
    redis_server = Outage(SERVICE)

    def logged() -> list[tuple[str, str, str]]:
        return [(r.name, r.levelname, r.getMessage()) for r in caplog.records]

    redis_server.lost(REFUSED, since=time.monotonic())
    begun_while_down = time.monotonic()  # e.g. a publish waiting on its timeout
    redis_server.lost(REFUSED, since=time.monotonic())  # still the same outage
    assert logged() == [("games.live", "WARNING", GONE)]
    assert redis_server.down

    redis_server.back()  # another thread reached Redis
    assert logged() == [
        ("games.live", "WARNING", GONE),
        ("games.live", "WARNING", BACK),
    ]
    assert not redis_server.down

    # The attempt begun while Redis was away fails only now: nothing new.
    redis_server.lost(REFUSED, since=begun_while_down)
    assert logged() == [
        ("games.live", "WARNING", GONE),
        ("games.live", "WARNING", BACK),
    ]
    assert not redis_server.down

    # An attempt begun after Redis came back and failing: a new outage.
    redis_server.lost(REFUSED, since=time.monotonic())
    assert logged() == [
        ("games.live", "WARNING", GONE),
        ("games.live", "WARNING", BACK),
        ("games.live", "WARNING", GONE),
    ]
    assert redis_server.down
