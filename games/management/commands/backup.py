"""`manage.py backup [--dir DIR]` (`make backup`): a consistent copy of the
whole database, taken while the site runs, written to DIR (default `backups`,
created mode 0700: it holds password hashes and email addresses) as
`tictactoe-<UTC time>.<dump|sqlite3>`, mode 0600; the last line printed is its
path. Restoring is in docs/operations.md, "Backups".

- PostgreSQL: `pg_dump --format=custom`, one snapshot of every table (what
  `pg_restore` reads). pg_dump refuses a server newer than itself: the first of
  PATH's and /usr/lib/postgresql/*/bin's (newest first) at least as new as the
  server is used; none, and the command says which to install.
- SQLite: the online backup API (`sqlite3.Connection.backup`), a consistent copy
  while pages write; a copy of the file may catch a write half done.

Written under a temporary name, renamed when whole: a file with the final name
is always a complete backup.
"""

import glob
import os
import re
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from psycopg.conninfo import make_conninfo

from tictactoe_site.lib import private_dirs

VERSION = re.compile(r"\(PostgreSQL\) (\d+)")


def client_version(program: str) -> int | None:
    """The major version of a PostgreSQL client program, None if it does not
    run."""
    try:
        out = subprocess.run(
            [program, "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = VERSION.search(out)
    return int(found[1]) if found else None


def postgresql_client(name: str, server_major: int) -> str:
    """The path of client program `name` (pg_dump, pg_restore) able to work
    with a server of version `server_major`."""
    on_path = shutil.which(name)
    installed = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda path: int(Path(path).parts[-3]),
        reverse=True,
    )
    for program in [p for p in [on_path, *installed] if p]:
        version = client_version(program)
        if version is not None and version >= server_major:
            return program
    raise CommandError(
        f"{name} {server_major} or newer is needed for this PostgreSQL "
        f"{server_major} server; none found on PATH or in "
        f"/usr/lib/postgresql/*/bin. Install the client of that version "
        f"(Debian/Ubuntu: apt-get install postgresql-client-{server_major})."
    )


def server_major() -> int:
    connection.ensure_connection()
    return connection.pg_version // 10000


def libpq_target() -> tuple[str, dict[str, str]]:
    """Django's connection parameters as a libpq connection string (for
    --dbname) and the environment carrying the password, which the command line
    would show to every user of the machine."""
    params = {
        key: value
        for key, value in connection.get_connection_params().items()
        if isinstance(value, str | int) and key != "password"
    }
    env = dict(os.environ)
    if password := connection.settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = password
    return make_conninfo(**params), env


def dump_postgresql(target: Path) -> None:
    pg_dump = postgresql_client("pg_dump", server_major())
    conninfo, env = libpq_target()
    done = subprocess.run(
        [pg_dump, "--format=custom", f"--file={target}", f"--dbname={conninfo}"],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise CommandError(f"pg_dump failed: {done.stderr.strip()}")


def copy_sqlite(target: Path) -> None:
    connection.ensure_connection()
    copy = sqlite3.connect(target)
    try:
        connection.connection.backup(copy)
    finally:
        copy.close()


class Command(BaseCommand):
    help = "Write a consistent backup of the database to --dir (default: backups)."

    def add_arguments(self, parser):
        parser.add_argument("--dir", dest="directory", default="backups", type=Path)

    def handle(self, *args, directory: Path, **options):
        if connection.vendor == "postgresql":
            write, suffix = dump_postgresql, "dump"
        elif connection.vendor == "sqlite":
            write, suffix = copy_sqlite, "sqlite3"
        else:
            raise CommandError(f"no backup for {connection.vendor}")
        private_dirs.make(directory)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        final = directory / f"tictactoe-{stamp}.{suffix}"
        partial = directory / f".{final.name}.partial"
        partial.touch(mode=0o600)
        try:
            write(partial)
            partial.replace(final)
        finally:
            partial.unlink(missing_ok=True)
        self.stdout.write(str(final))
