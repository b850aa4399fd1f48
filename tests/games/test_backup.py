"""Backups that restore (`make backup`, games/management/commands/backup.py): a
backup taken of a database holding games of every status, restored into a fresh
database as docs/operations.md says (PostgreSQL: pg_restore into a new
database; SQLite: the file copied into place), passes `check_games` with every
game and move present."""

import io
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from games import services
from games.management.commands import backup
from games.models import Game, Move

from ..conftest import DRAW, O_WINS_ROW_1, X_WINS_ROW_0, forfeit_now, new_game
from ..support.served import ROOT, fresh_database, migrate_env, on_postgresql

GAME_COLUMNS = "id, status, board, move_order, move_count, version, winning_line"
MOVE_COLUMNS = "game_id, sequence_number, row, col, player"


def games_of_every_status(alice, bob, carol, play) -> set[str]:
    play(new_game(alice, bob), *X_WINS_ROW_0)
    play(new_game(bob, carol), *O_WINS_ROW_1)
    play(new_game(carol, alice), *DRAW)
    forfeit_now(play(new_game(alice, carol), (1, 1), (0, 0)))
    aborted = new_game(bob, alice)
    services.abort(game_id=aborted.pk, user=bob)
    play(new_game(alice, bob), (2, 2), (0, 2), (1, 1))  # in progress
    services.create_game(creator=carol)  # open: waiting for an opponent
    play(new_game(alice, alice), *X_WINS_ROW_0)  # both sides alone
    return set(Game.objects.values_list("status", flat=True))


def rows(database_url: str, table: str, columns: str, order: str) -> list[tuple]:
    sql = f"SELECT {columns} FROM {table} ORDER BY {order}"
    if database_url.startswith("sqlite:///"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as copy:
            return [tuple(row) for row in copy.execute(sql)]
    with psycopg.connect(database_url) as restored:
        return [tuple(row) for row in restored.execute(sql)]


def take_backup(directory: Path) -> Path:
    out = io.StringIO()
    call_command("backup", "--dir", str(directory), stdout=out)
    return Path(out.getvalue().strip().splitlines()[-1])


def restore(dump: Path, database_url: str) -> None:
    """As docs/operations.md, "Backups", says."""
    if database_url.startswith("sqlite:///"):
        shutil.copyfile(dump, database_url.removeprefix("sqlite:///"))
        return
    pg_restore = backup.postgresql_client("pg_restore", backup.server_major())
    subprocess.run(
        [pg_restore, "--no-owner", "--exit-on-error", f"--dbname={database_url}", dump],
        check=True,
        capture_output=True,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.processes
def test_a_backup_restores_into_a_fresh_database_with_every_game_and_move(
    alice, bob, carol, play, tmp_path
):
    statuses = games_of_every_status(alice, bob, carol, play)
    assert statuses == {
        "waiting",
        "in_progress",
        "x_won",
        "o_won",
        "draw",
        "x_forfeits",
        "aborted",
    }
    dump = take_backup(tmp_path / "backups")
    assert dump.parent == tmp_path / "backups"
    assert dump.name.startswith("tictactoe-")
    assert dump.suffix == (".dump" if on_postgresql() else ".sqlite3")
    assert stat.S_IMODE(dump.stat().st_mode) == 0o600
    assert stat.S_IMODE(dump.parent.stat().st_mode) == 0o700
    assert os.listdir(dump.parent) == [dump.name]  # no partial file left

    with fresh_database(tmp_path, "restored") as database_url:
        restore(dump, database_url)
        checked = subprocess.run(
            [sys.executable, "manage.py", "check_games"],
            cwd=ROOT,
            env=migrate_env(database_url, tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.strip().endswith("8 game(s) checked: all consistent.")
        assert rows(database_url, "games_game", GAME_COLUMNS, "id") == list(
            Game.objects.order_by("id").values_list(*GAME_COLUMNS.split(", "))
        )
        moves = list(
            Move.objects.order_by("game_id", "sequence_number").values_list(
                *MOVE_COLUMNS.split(", ")
            )
        )
        assert len(moves) == 5 + 6 + 9 + 2 + 0 + 3 + 5
        assert (
            rows(database_url, "games_move", MOVE_COLUMNS, "game_id, sequence_number")
            == moves
        )


def test_a_pg_dump_older_than_the_server_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr(backup.shutil, "which", lambda name: f"/opt/old/{name}")
    monkeypatch.setattr(backup.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(backup, "client_version", lambda program: 9)
    with pytest.raises(CommandError) as refused:
        backup.postgresql_client("pg_dump", 15)
    assert str(refused.value) == (
        "pg_dump 15 or newer is needed for this PostgreSQL 15 server; none found "
        "on PATH or in /usr/lib/postgresql/*/bin. Install the client of that "
        "version (Debian/Ubuntu: apt-get install postgresql-client-15)."
    )


def test_the_newest_installed_client_serves_when_path_has_none(monkeypatch):
    found = {
        "/usr/lib/postgresql/13/bin/pg_dump": 13,
        "/usr/lib/postgresql/16/bin/pg_dump": 16,
        "/usr/lib/postgresql/9/bin/pg_dump": 9,
    }
    monkeypatch.setattr(backup.shutil, "which", lambda name: None)
    monkeypatch.setattr(backup.glob, "glob", lambda pattern: list(found))
    monkeypatch.setattr(backup, "client_version", found.get)
    assert backup.postgresql_client("pg_dump", 15) == (
        "/usr/lib/postgresql/16/bin/pg_dump"
    )


def test_a_failed_backup_leaves_no_file_with_a_backups_name(db, tmp_path, monkeypatch):
    def fail(target):
        target.write_bytes(b"half")
        raise CommandError("pg_dump failed: disk full")

    monkeypatch.setattr(backup, "dump_postgresql", fail)
    monkeypatch.setattr(backup, "copy_sqlite", fail)
    with pytest.raises(CommandError, match="disk full"):
        call_command("backup", "--dir", str(tmp_path))
    assert os.listdir(tmp_path) == []
