"""How a process hears what every process publishes: the listener of the broker
in use (games.live.brokers), started on the server's event loop and stopped
with it, and the database read a hub catches up from after it was not
listening (`current_versions`)."""

import asyncio
import contextlib
import logging
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections

from games.models import Game

from .brokers import Receiver, datagrams, postgres_notify, redis_pubsub

logger = logging.getLogger("games.live")


class Listener:
    """This process's listening side of the broker in use, for one receiver."""

    def __init__(self) -> None:
        self._task: asyncio.Task | None = None
        self._datagrams: asyncio.DatagramTransport | None = None
        self._socket_path: Path | None = None

    @property
    def running(self) -> bool:
        return self._datagrams is not None or (
            self._task is not None and not self._task.done()
        )

    def start(self, receiver: Receiver) -> bool:
        """Listen for `receiver` on the running loop; False when there is nothing
        to listen to (an in-memory database: publish tells this process's hub)."""
        if settings.REDIS_URL:
            self._task = asyncio.create_task(
                redis_pubsub.listen(receiver, settings.REDIS_URL)
            )
        elif postgres_notify.in_use():
            self._task = asyncio.create_task(postgres_notify.listen(receiver))
        elif (directory := datagrams.socket_directory()) is not None:
            self._socket_path = directory / datagrams.socket_name()
            self._task = asyncio.create_task(self._listen_datagrams(receiver))
            self._task.add_done_callback(_log_failure)
        else:
            return False
        return True

    async def _listen_datagrams(self, receiver: Receiver) -> None:
        self._datagrams = await datagrams.listen(
            self._socket_path, receiver.deliver_payload
        )
        receiver.listening.set()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._datagrams is not None:
            self._datagrams.close()
            self._datagrams = None
        if self._socket_path is not None:
            self._socket_path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the last process out tidies up
                self._socket_path.parent.rmdir()
            self._socket_path = None


def current_versions(game_ids: list[int]) -> dict[int, int]:
    """The current version of each game (in a thread: the ORM is synchronous)."""
    close_old_connections()
    try:
        return dict(Game.objects.filter(pk__in=game_ids).values_list("pk", "version"))
    finally:
        close_old_connections()


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("live updates cannot listen", exc_info=task.exception())
