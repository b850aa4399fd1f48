"""A stream ends when its session does: after an AccountChanged notice, or once a
lost broker connection is back, the hub re-checks the sessions of the streams
concerned, in a thread (games.live.sessions: they read the session store and
the database), and ends those whose session no longer logs their user in."""

import asyncio
import logging

from . import sessions
from .subscribers import Subscriber

logger = logging.getLogger("games.live")


class SessionRechecks:
    """The re-checks under way on the event loop, cancelled when the hub stops."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()

    def start(self, subscribers: list[Subscriber], *, end_if_unsure: bool) -> None:
        task = asyncio.create_task(end_lapsed(subscribers, end_if_unsure))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()


async def end_lapsed(subscribers: list[Subscriber], end_if_unsure: bool) -> None:
    """End the streams whose session no longer logs their user in. When that
    cannot be told (the database is away), `end_if_unsure`: end them all (the
    browsers reconnect and are authenticated afresh)."""
    opened_as = {s.session_key: s.user_id for s in subscribers}
    try:
        lapsed = await asyncio.to_thread(sessions.lapsed, opened_as)
    except Exception:
        if not end_if_unsure:
            logger.warning("live streams' sessions not re-checked", exc_info=True)
            return
        logger.warning("live streams' sessions not re-checked; ending them")
        lapsed = set(opened_as)
    for subscriber in subscribers:
        if subscriber.session_key in lapsed:
            subscriber.close()
