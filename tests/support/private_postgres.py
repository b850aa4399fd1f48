"""A PostgreSQL server of the test's own: its own data directory and port, trust
authentication, started and stopped with pg_ctl.

initdb refuses to run as root (CI runs as root): then every server command runs
as the `postgres` OS user, who owns the data directory.

`replicated_postgres()` gives a primary and its streaming standby (pg_basebackup
-R), replicated synchronously (synchronous_standby_names, as Patroni or a
managed service sets it): a commit is acknowledged once the standby has it.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg

from .served import free_port

BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
OWNER = "postgres"  # the OS user that runs the server when we are root


class PrivatePostgres:
    def __init__(self) -> None:
        self.port = free_port()
        # Not under pytest's tmp_path: that is private to the current user, and
        # the server may run as another one.
        self.root = Path(tempfile.mkdtemp(prefix="ttt-private-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_root = os.geteuid() == 0
        self.settings: dict[str, str] = {}  # more `-c name=value` at start
        if self.as_root:
            owner = pwd.getpwnam(OWNER)
            os.chown(self.root, owner.pw_uid, owner.pw_gid)

    def _run(self, *command: str, timeout: float = 120) -> None:
        prefix = ["runuser", "-u", OWNER, "--"] if self.as_root else []
        result = subprocess.run(
            [*prefix, *command],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}\n"
                f"{self.server_log()}"
            )

    def init(self) -> None:
        self._run(
            str(BIN / "initdb"),
            "--pgdata",
            str(self.data),
            "--auth=trust",
            "--username=postgres",
            "--encoding=UTF8",
            "--locale=C",
            "--no-instructions",
            "--no-sync",  # a test's server: nothing to keep past the machine's life
        )

    def start(self) -> None:
        """Start and wait until it accepts connections (pg_ctl -w, bounded)."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.root}"
        ) + "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run(
            str(BIN / "pg_ctl"),
            "start",
            "--wait",
            "--timeout=60",
            f"--pgdata={self.data}",
            f"--log={self.log}",
            f"--options={options}",
        )

    def stop(self) -> None:
        """Fast shutdown: open sessions are ended, committed work is kept."""
        self._run(
            str(BIN / "pg_ctl"), "stop", "--wait", "-m", "fast", "-D", str(self.data)
        )

    def crash(self) -> None:
        """Immediate shutdown, as a crash: no checkpoint, sessions cut off."""
        self._run(
            str(BIN / "pg_ctl"),
            "stop",
            "--wait",
            "-m",
            "immediate",
            "-D",
            str(self.data),
        )

    def base_backup_of(self, primary: "PrivatePostgres") -> None:
        """This server's data: a copy of `primary`'s, set up as its streaming
        standby (pg_basebackup -R writes standby.signal and primary_conninfo)."""
        self._run(
            str(BIN / "pg_basebackup"),
            f"--pgdata={self.data}",
            "--host=127.0.0.1",
            f"--port={primary.port}",
            "--username=postgres",
            "--write-recovery-conf",
            "--checkpoint=fast",
            "--wal-method=stream",
        )

    def promote(self) -> None:
        """A standby becomes a primary (pg_ctl promote, waiting until it is)."""
        self._run(
            str(BIN / "pg_ctl"),
            "promote",
            "--wait",
            "--timeout=60",
            "-D",
            str(self.data),
        )

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def destroy(self) -> None:
        """Stop the server if it runs (immediate) and remove its files."""
        if (self.data / "postmaster.pid").exists():
            prefix = ["runuser", "-u", OWNER, "--"] if self.as_root else []
            subprocess.run(
                [
                    *prefix,
                    str(BIN / "pg_ctl"),
                    "stop",
                    "-m",
                    "immediate",
                    "-D",
                    str(self.data),
                ],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def private_postgres():
    """A private PostgreSQL server, initialised and started; destroyed after."""
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.destroy()


def multi_host_url(database: str, *servers: PrivatePostgres) -> str:
    """libpq's multi-host form naming `servers`, connecting to the primary."""
    hosts = ",".join(f"127.0.0.1:{server.port}" for server in servers)
    return f"postgres://postgres@{hosts}/{database}?target_session_attrs=read-write"


def _wait_for_synchronous_standby(primary: PrivatePostgres, timeout: float = 60):
    """Until the primary streams to a synchronous standby (bounded)."""
    deadline = time.monotonic() + timeout
    query = "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"
    with psycopg.connect(primary.url("postgres"), autocommit=True) as connection:
        while connection.execute(query).fetchone()[0] == 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no synchronous standby:\n{primary.server_log()}")
            time.sleep(0.05)  # polling the primary's view, bounded


@contextmanager
def replicated_postgres():
    """A primary and its synchronous streaming standby, both started (the
    standby hot: it answers read-only queries); destroyed after."""
    primary, standby = PrivatePostgres(), PrivatePostgres()
    try:
        primary.init()
        # fsync off: the test crashes processes, never the machine, so what a
        # server wrote is kept; commits wait for the standby, not for the disk.
        primary.settings = {"synchronous_standby_names": "'*'", "fsync": "off"}
        primary.start()
        standby.base_backup_of(primary)
        standby.settings = {"fsync": "off"}
        standby.start()
        _wait_for_synchronous_standby(primary)
        yield primary, standby
    finally:
        standby.destroy()
        primary.destroy()
