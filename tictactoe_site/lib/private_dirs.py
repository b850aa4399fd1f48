"""Directories only the server's user may write.

The session cache holds pickles, which the server processes load; the live-update
sockets take news every process acts on. Whoever can write to their directories
can run code in, or feed news to, every server process; so they are created with
mode 0700 and refused (games.checks) when another user could write to them.
"""

import contextlib
import os
import stat
from pathlib import Path


def make(path: Path) -> None:
    """Create `path` and each of its missing parents with mode 0700 (mkdir's
    `parents=True` would give the parents the default mode)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process was first
            parent.mkdir(mode=0o700)
    path.mkdir(mode=0o700, exist_ok=True)  # FileExistsError if a file is there


def problem(path: Path) -> str | None:
    """Why another user could write to the directory `path`, or None."""
    info = path.stat()
    if info.st_uid != os.geteuid():
        return (
            f"{path} is owned by uid {info.st_uid}, not by the server's user "
            f"(uid {os.geteuid()})"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
        )
    return None


def problems(*paths: Path, root: Path) -> list[str]:
    """`problem` of each of `paths` and of each of their parents up to `root`
    (the directories the app itself creates), each directory once."""
    root = Path(root)
    chain = []
    for path in map(Path, paths):
        chain += [path]
        if path.is_relative_to(root):
            chain += [parent for parent in path.parents if parent.is_relative_to(root)]
    return [
        found for directory in dict.fromkeys(chain) if (found := problem(directory))
    ]
