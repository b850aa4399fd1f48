"""With an in-memory SQLite database (tests: one process, nothing to share)
a change goes straight to this process's hub."""

from ..changes import AccountChanged, Change
from ..hub import hub


def publish(change: Change | AccountChanged) -> None:
    hub.deliver_threadsafe(change)
