"""A PostgreSQL server of the test's own: its own data directory and port, trust
authentication, started and stopped with pg_ctl.

initdb refuses to run as root (CI runs as root): then every server command runs
as the `postgres` OS user, who owns the data directory.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
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
        )

    def start(self) -> None:
        """Start and wait until it accepts connections (pg_ctl -w, bounded)."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.root}"
        )
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
