"""Migrations on large tables follow one policy (docs/operations.md,
"Migrations on large tables"): since the cut-off, an index on an existing table
is built concurrently (tictactoe_site.lib.migration_operations) in a migration with
`atomic = False`, a constraint on an existing table is not added in one locking
step, and every migration runs under a `lock_timeout` on PostgreSQL
(games/management/commands/migrate.py). The migrations before the cut-off ran
as they are and stay so.

Also: the task table's indexes (games 0010) exist and the heartbeat's queries
use them."""

import subprocess
import sys
from datetime import timedelta

import psycopg
import pytest
from django.db import NotSupportedError, connection, migrations, models, transaction
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import AddConstraint, AddIndex, RunSQL
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tictactoe_site.jobs.heartbeat import beat
from tictactoe_site.lib.migration_operations import (
    AddIndexConcurrently,
    AddTableIndexConcurrently,
)

from ..support.served import ROOT, fresh_database, migrate_env

# The last migration of each app of ours that ran before the policy.
CUT_OFF = {"games": "0009_site_identity", "accounts": "0002_turn_email_preference"}
CONCURRENT = (AddIndexConcurrently, AddTableIndexConcurrently)


def _operations(migration):
    for operation in migration.operations:
        if isinstance(operation, migrations.SeparateDatabaseAndState):
            yield from operation.database_operations
        else:
            yield operation


def _sql(operation: RunSQL) -> str:
    statements = (
        operation.sql if isinstance(operation.sql, list | tuple) else [operation.sql]
    )
    return " ".join(str(statement) for statement in statements).upper()


def violations(migration) -> list[str]:
    """How `migration` breaks the policy (none: it follows it). Every existing
    table counts as large: any of them grows with the players. A table created
    in the same migration is empty, so anything goes on it."""
    created = {
        operation.name_lower
        for operation in migration.operations
        if isinstance(operation, migrations.CreateModel)
    }
    found = []
    for operation in _operations(migration):
        if type(operation) is AddIndex and operation.model_name_lower not in created:
            found.append(
                f"{operation.describe()}: a plain CREATE INDEX locks the table's "
                "writes; use "
                "tictactoe_site.lib.migration_operations.AddIndexConcurrently"
            )
        if (
            type(operation) is AddConstraint
            and operation.model_name_lower not in created
        ):
            found.append(
                f"{operation.describe()}: on an existing table, add it NOT VALID "
                "and VALIDATE it apart (docs/operations.md)"
            )
        if isinstance(operation, RunSQL):
            sql = _sql(operation)
            if "CREATE INDEX" in sql and "CREATE INDEX CONCURRENTLY" not in sql:
                found.append("RunSQL: CREATE INDEX without CONCURRENTLY")
            if "ADD CONSTRAINT" in sql and "NOT VALID" not in sql:
                found.append("RunSQL: ADD CONSTRAINT without NOT VALID")
        if isinstance(operation, CONCURRENT) and migration.atomic:
            found.append(f"{operation.describe()}: needs atomic = False")
    return found


def since_cut_off() -> list:
    """The migrations of this project's apps (not of installed packages) after
    the cut-off: all of an app that had none before it."""
    ours = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return [
        migration
        for (app, name), migration in sorted(loader.disk_migrations.items())
        if type(migration).__module__.split(".")[0] in ours
        and name > CUT_OFF.get(app, "")
    ]


def test_every_migration_since_the_cut_off_follows_the_policy():
    checked = since_cut_off()
    assert ("games", "0010_task_table_indexes") in [
        (m.app_label, m.name) for m in checked
    ]
    assert not any(m.name <= CUT_OFF.get(m.app_label, "") for m in checked)
    assert {f"{m.app_label}.{m.name}": violations(m) for m in checked} == {
        f"{m.app_label}.{m.name}": [] for m in checked
    }


def a_migration(*operations, atomic=True):
    return type(
        "Migration",
        (migrations.Migration,),
        {"operations": list(operations), "atomic": atomic},
    )("0099_probe", "games")


def test_the_policy_check_finds_each_way_to_break_it():
    index = models.Index(fields=["finished_at"], name="game_probe")
    check = models.CheckConstraint(
        condition=models.Q(version__gte=1), name="game_probe_check"
    )
    assert violations(a_migration(AddIndex("game", index), atomic=False)) == [
        "Create index game_probe on field(s) finished_at of model game: a plain "
        "CREATE INDEX locks the table's writes; use "
        "tictactoe_site.lib.migration_operations.AddIndexConcurrently"
    ]
    assert violations(a_migration(AddIndexConcurrently("game", index))) == [
        "Concurrently create index game_probe on game: needs atomic = False"
    ]
    assert violations(a_migration(AddConstraint("game", check), atomic=False)) == [
        "Create constraint game_probe_check on model game: on an existing table, "
        "add it NOT VALID and VALIDATE it apart (docs/operations.md)"
    ]
    assert violations(
        a_migration(
            RunSQL("CREATE INDEX x ON games_game (finished_at)"),
            RunSQL(["ALTER TABLE games_game ADD CONSTRAINT c CHECK (version > 0)"]),
        )
    ) == [
        "RunSQL: CREATE INDEX without CONCURRENTLY",
        "RunSQL: ADD CONSTRAINT without NOT VALID",
    ]
    # What the policy asks for passes; so does anything on a new table.
    assert (
        violations(a_migration(AddIndexConcurrently("game", index), atomic=False)) == []
    )
    new_table = migrations.CreateModel(
        "Probe", [("id", models.AutoField(primary_key=True))]
    )
    assert (
        violations(
            a_migration(
                new_table,
                AddIndex("probe", models.Index(fields=["id"], name="probe_id")),
                AddConstraint(
                    "probe",
                    models.CheckConstraint(
                        condition=models.Q(id__gt=0), name="probe_c"
                    ),
                ),
            )
        )
        == []
    )


def indexes_of(table: str) -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name for name, info in constraints.items() if info["index"]}


@pytest.mark.django_db(transaction=True)
def test_the_concurrent_index_operation_builds_and_drops_an_index():
    """Outside a transaction, as a migration with atomic = False runs it: on
    PostgreSQL CREATE INDEX CONCURRENTLY, a plain CREATE INDEX on SQLite."""
    operation = AddIndexConcurrently(
        "game", models.Index(fields=["finished_at"], name="game_probe")
    )
    before = MigrationLoader(connection).project_state()
    after = before.clone()
    operation.state_forwards("games", after)
    with connection.schema_editor(atomic=False, collect_sql=False) as editor:
        operation.database_forwards("games", editor, before, after)
    try:
        assert "game_probe" in indexes_of("games_game")
    finally:
        with connection.schema_editor(atomic=False) as editor:
            operation.database_backwards("games", editor, after, before)
    assert "game_probe" not in indexes_of("games_game")


@pytest.mark.postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_concurrent_index_in_a_transaction_is_refused_with_the_fix():
    operation = AddIndexConcurrently(
        "game", models.Index(fields=["finished_at"], name="game_probe")
    )
    before = MigrationLoader(connection).project_state()
    after = before.clone()
    operation.state_forwards("games", after)
    with (
        pytest.raises(NotSupportedError, match="set atomic = False on the migration"),
        connection.schema_editor(atomic=True) as editor,
    ):
        operation.database_forwards("games", editor, before, after)
    assert "game_probe" not in indexes_of("games_game")


def index_valid(name: str):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", [name]
        )
        return cursor.fetchone()[0]


@pytest.mark.postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_release_run_again_finishes_an_index_build_cut_short():
    """Run again after a stop, the migration keeps the indexes already built
    and builds again one a stopped CREATE INDEX CONCURRENTLY left INVALID."""
    migration = MigrationLoader(connection).get_migration(
        "games", "0010_task_table_indexes"
    )
    state = MigrationLoader(connection).project_state()
    with connection.cursor() as cursor:  # as a build cut short leaves it
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = 'tasks_finished_at'::regclass"
        )
    assert index_valid("tasks_finished_at") is False
    with connection.schema_editor(atomic=False) as editor:
        for operation in migration.operations:
            operation.database_forwards("games", editor, state, state)
    assert index_valid("tasks_path_status_finished") is True
    assert index_valid("tasks_finished_at") is True


# -- the task table -----------------------------------------------------------------

TASK_TABLE = DBTaskResult._meta.db_table


def plan(queryset) -> str:
    """The query plan of `queryset`; on PostgreSQL with sequential scans priced
    out, so the plan says whether an index serves the query at all (the test
    table is too small for the planner to prefer one)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def test_the_task_table_has_the_heartbeats_indexes(db):
    assert {"tasks_path_status_finished", "tasks_finished_at"} <= indexes_of(TASK_TABLE)


def test_the_heartbeat_and_workerz_queries_use_them(db):
    now = timezone.now()
    last_beat = DBTaskResult.objects.filter(
        task_path=beat.module_path, status=TaskResultStatus.SUCCESSFUL
    ).order_by("-finished_at")[:1]
    assert "tasks_path_status_finished" in plan(last_beat)
    old_results = DBTaskResult.objects.filter(finished_at__lt=now - timedelta(days=1))
    assert "tasks_finished_at" in plan(old_results)


# -- lock_timeout ---------------------------------------------------------------------


@pytest.mark.postgresql_only
def test_a_migration_waiting_for_a_table_lock_gives_up_after_the_lock_timeout(
    tmp_path,
):
    """A long transaction holds the task table: the migration that indexes it
    fails after LOCK_TIMEOUT, saying why, instead of queueing every query of
    the table behind it; once the table is free, the release runs again."""
    with fresh_database(tmp_path, "lock_timeout") as database_url:
        env = migrate_env(database_url, tmp_path)

        def migrate(*target: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", *target],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        assert migrate("django_tasks_database").returncode == 0
        assert migrate("games", "0009").returncode == 0
        with psycopg.connect(database_url) as holder:
            holder.execute(f'LOCK TABLE "{TASK_TABLE}" IN SHARE UPDATE EXCLUSIVE MODE')
            waited = migrate()
            holder.rollback()
        assert waited.returncode == 1
        assert "canceling statement due to lock timeout" in waited.stderr
        with psycopg.connect(database_url) as check:
            (present,) = check.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname = "
                "'tasks_path_status_finished'"
            ).fetchone()
        assert present == 0
        again = migrate()
        assert again.returncode == 0, again.stderr
