"""Open files: every connection, live stream included, holds one descriptor.

Linux limits the descriptors of a process (RLIMIT_NOFILE): the soft limit is
often 1,024 while the hard limit, which only root can raise, is much higher. At
start-up the server raises its soft limit to the hard one (its worker processes
inherit it) and says clearly when even that is below what WEB_MAX_CONNECTIONS
(open connections per process the operator plans for) needs.
"""

import resource

# Descriptors a process holds besides its connections: the listening socket,
# database and broker connections, log files, the event loop's own.
OVERHEAD = 100


def raise_open_files_limit() -> int:
    """Raise the soft limit to the hard one; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        with open("/proc/sys/fs/nr_open") as nr_open:  # the kernel's ceiling
            hard = int(nr_open.read())
    if soft == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return soft
    return hard


def open_files_warning(limit: int, connections: int) -> str | None:
    """What to tell the operator when `limit` is too low for `connections`."""
    needed = connections + OVERHEAD
    if limit >= needed:
        return None
    return (
        f"Open-file limit too low: each server process may open {limit} files, but "
        f"WEB_MAX_CONNECTIONS={connections} needs {needed} (one per connection, "
        f"live streams included, plus {OVERHEAD}). Beyond about {limit - OVERHEAD} "
        "connections a process refuses new ones. Raise the hard limit (systemd: "
        "LimitNOFILE=; a shell: ulimit -Hn as root; Docker: --ulimit nofile=) or "
        "lower WEB_MAX_CONNECTIONS."
    )
