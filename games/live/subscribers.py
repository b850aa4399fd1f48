"""Who a change wakes, and when: a `Subscriber` per open stream (only the latest
version it has not sent: bounded memory), and the `Coalescer` that wakes the
lobbies at most once a second. Both run on the server's event loop."""

import asyncio


class Subscriber:
    """One open stream: the latest version (or lobby refresh count) it has not
    sent yet, and a wake-up."""

    __slots__ = (
        "_event",
        "pending",
        "changed",
        "ping_due",
        "closed",
        "slice",
        "user_id",
        "session_key",
        "address",
    )

    def __init__(self, slice_: int = 0) -> None:
        self._event = asyncio.Event()
        self.pending = 0  # the newest version (or a counter) not yet sent
        self.changed = False  # a change arrived since the last wake-up
        self.ping_due = False
        self.closed = False
        self.slice = slice_
        # Whose stream it is, once admitted (Hub.admit).
        self.user_id: int | None = None
        self.session_key: str | None = None
        # A visitor's network, once admitted (Hub.admit_visitor).
        self.address: str | None = None

    def notify(self, version: int) -> None:
        if version > self.pending:
            self.pending = version
        self.changed = True
        self._event.set()

    def ping(self) -> None:
        self.ping_due = True
        self._event.set()

    def close(self) -> None:
        self.closed = True
        self._event.set()

    async def wait(self) -> tuple[bool, bool]:
        """Until a change, a ping or the end: (a change arrived, a ping is due)."""
        await self._event.wait()
        self._event.clear()
        woke = self.changed, self.ping_due
        self.changed = self.ping_due = False
        return woke


# Lobby refreshes reach this process's lobby streams at most once a second
# (Coalescer): one user creating and aborting open games over and over costs
# each lobby at most one re-render a second, and the hub one pass over the
# lobbies a second rather than one per change.
LOBBY_INTERVAL_SECONDS = 1.0


class Coalescer:
    """Calls `flush` at most once per `interval` seconds: asked after a quiet
    interval, at once (the leading edge); asked within the interval, once at
    its end (the trailing edge, so the last change always arrives). `clock`
    tells the time in seconds; `schedule(delay, callback)` calls `callback`
    after `delay` seconds and returns a handle with cancel() (the event loop's
    call_later). Runs on one thread: the event loop's."""

    def __init__(self, interval: float, flush, *, clock, schedule) -> None:
        self.interval = interval
        self._flush = flush
        self._clock = clock
        self._schedule = schedule
        self._last: float | None = None  # when flush was last called
        self._handle = None  # the trailing flush, while one is due

    def flush_soon(self) -> None:
        if self._handle is not None:
            return  # the trailing flush covers this call too
        now = self._clock()
        if self._last is None or now - self._last >= self.interval:
            self._run(now)
        else:
            self._handle = self._schedule(
                self._last + self.interval - now, self._trailing
            )

    def _trailing(self) -> None:
        self._handle = None
        self._run(self._clock())

    def _run(self, now: float) -> None:
        self._last = now
        self._flush()

    def cancel(self) -> None:
        """Forget the trailing flush due (the hub stops)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._last = None
