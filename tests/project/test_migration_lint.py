"""`make lint` refuses a migration the hosts still on the previous release cannot
run (docs/operations.md, "Releases"): its line `python -m
tests.support.migration_lint`, run in a copy of the checkout holding new
migrations, each after the last one of games. The expand steps pass; a drop, a
rename and a NOT NULL column without a database default fail, each named.

PostgreSQL pass only: the linter reads PostgreSQL's SQL, from the pass's server."""

import os
import re
import subprocess
import sys

import pytest

from ..support.fleet import copy_checkout
from ..support.releases import EXPAND_OPERATION, latest_migration, write_migration

pytestmark = [pytest.mark.processes, pytest.mark.postgresql_only]

IMPORTS = "from tictactoe_site.lib.migration_operations import AddIndexConcurrently\n"
CONCURRENTLY = "AddIndexConcurrently("  # outside a transaction: atomic = False
EXPAND = {
    "0100_nullable": 'migrations.AddField("game", "note", '
    "models.CharField(max_length=20, null=True))",
    "0100_database_default": EXPAND_OPERATION,
    "0100_index_built_concurrently": CONCURRENTLY
    + '"game", models.Index(fields=["finished_at"], name="game_finished"))',
}
# Each with what the linter says of it.
CONTRACT = {
    "0100_drop": (
        'migrations.RemoveField("game", "move_order")',
        "DROPPING columns (table: games_game, column: move_order)",
    ),
    "0100_rename": (
        'migrations.RenameField("game", "move_order", "cells")',
        "RENAMING columns (table: games_game, column: move_order)",
    ),
    "0100_column_renamed_under_its_field": (
        'migrations.AlterField("game", "board", models.CharField('
        'max_length=9, default="_________", db_column="cells"))',
        "RENAMING columns (table: games_game, column: board)",
    ),
    "0100_not_null_python_default": (
        'migrations.AddField("game", "note", '
        'models.CharField(max_length=20, default="x"))',
        "NOT NULL constraint on columns",
    ),
    "0100_null_tightened": (
        'migrations.AlterField("game", "winning_line", '
        "models.PositiveSmallIntegerField(default=0))",
        "NOT NULL constraint on columns",
    ),
    "0100_table_dropped": (
        'migrations.DeleteModel("Block")',
        "DROPPING table (table: games_block)",
    ),
}
VERDICT = re.compile(r"^\((\w+), (\w+)\)\.\.\. (.+)$")


@pytest.fixture
def checkout(tmp_path):
    return copy_checkout(tmp_path / "checkout")


def with_migrations(checkout, migrations: dict[str, str]) -> None:
    """Each of `migrations` (name: operation) in games, after its last one: as
    many next releases side by side, linted one by one."""
    after = latest_migration(checkout, "games")
    for name, operation in migrations.items():
        write_migration(
            checkout,
            "games",
            name,
            operation,
            after=after,
            imports=IMPORTS,
            atomic=not operation.startswith(CONCURRENTLY),
        )


def lint(checkout) -> tuple[int, dict[str, list[str]]]:
    """`make lint`'s migration line in `checkout`: its exit status, and what it
    said of each migration this test wrote (its verdict, then its reasons); the
    checkout's own are `make lint`'s to hold."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.migration_lint"],
        cwd=checkout,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(checkout),
            "TEST_POSTGRES_URL": os.environ["DATABASE_URL"],
            "REQUIRE_POSTGRES": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    said: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        if match := VERDICT.match(line):
            said[match[2]] = [match[3]]
        elif line.startswith("\t") and said:
            said[list(said)[-1]].append(line.strip())
    assert result.stderr.count("Traceback") == 0, result.stderr
    return result.returncode, {
        name: verdict for name, verdict in said.items() if name.startswith("0100_")
    }


def test_the_expand_steps_pass(checkout):
    with_migrations(checkout, EXPAND)
    assert lint(checkout) == (0, {name: ["OK"] for name in sorted(EXPAND)})


def test_a_drop_a_rename_or_a_not_null_column_fails_the_lint(checkout):
    with_migrations(checkout, EXPAND | {n: op for n, (op, _) in CONTRACT.items()})
    expected = {name: ["OK"] for name in EXPAND} | {
        name: ["ERR", reason] for name, (_, reason) in CONTRACT.items()
    }
    assert lint(checkout) == (1, dict(sorted(expected.items())))


def test_a_contract_step_accepted_by_name_passes(checkout):
    """docs/operations.md: a deliberate contract step, a release after the code
    stopped using the column, is added by name to the accepted migrations."""
    operation, _ = CONTRACT["0100_drop"]
    with_migrations(checkout, {"0100_drop": operation})
    settings = checkout / "tests/settings_migration_lint.py"
    accepted = '    "ignore_name": [\n'
    text = settings.read_text()
    assert text.count(accepted) == 1
    settings.write_text(text.replace(accepted, accepted + '        "0100_drop",\n'))
    assert lint(checkout) == (0, {})
