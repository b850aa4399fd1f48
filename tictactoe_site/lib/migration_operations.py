"""Migration operations that keep a large table in service while an index is
built (docs/operations.md, "Migrations on large tables";
tests/tictactoe_site/test_migration_policy.py holds every migration since the
cut-off to them).

PostgreSQL builds the index CONCURRENTLY: reads and writes go on while it is
built (a plain CREATE INDEX blocks every write to the table until it is done).
CONCURRENTLY cannot run in a transaction: a migration using these sets
`atomic = False`. SQLite has no CONCURRENTLY (and one writer at a time
anyway): a plain CREATE INDEX. Django's own AddIndexConcurrently is
PostgreSQL-only; these are the same operation on either engine.

A release stopped half-way (a `lock_timeout`, a lost connection) leaves what
a non-atomic migration had done, unrecorded, and a CONCURRENTLY build cut short
leaves an INVALID index behind. So on PostgreSQL building an index is
idempotent: a valid index of that name is kept, an invalid one dropped and
built again; running the release again finishes the job.
"""

from django.db import NotSupportedError
from django.db.migrations.operations import AddIndex
from django.db.migrations.operations.base import Operation


def _concurrently(schema_editor) -> bool:
    if schema_editor.connection.vendor != "postgresql":
        return False
    if schema_editor.connection.in_atomic_block:
        raise NotSupportedError(
            "CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction: "
            "set atomic = False on the migration."
        )
    return True


def _existing_index_valid(schema_editor, name: str) -> bool | None:
    """Whether the index `name` (on the search path) is valid; None if absent."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c "
            "ON c.oid = i.indexrelid WHERE c.relname = %s "
            "AND pg_table_is_visible(c.oid)",
            [name],
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def add_index(schema_editor, model, index) -> None:
    if not _concurrently(schema_editor):
        schema_editor.add_index(model, index)
        return
    valid = _existing_index_valid(schema_editor, index.name)
    if valid:
        return  # built by a release that stopped after it
    if valid is False:  # a build cut short
        schema_editor.remove_index(model, index, concurrently=True)
    schema_editor.add_index(model, index, concurrently=True)


def remove_index(schema_editor, model, index) -> None:
    if _concurrently(schema_editor):
        schema_editor.remove_index(model, index, concurrently=True)
    else:
        schema_editor.remove_index(model, index)


class AddIndexConcurrently(AddIndex):
    """AddIndex (on a model of the migration's app), built concurrently on
    PostgreSQL."""

    atomic = False

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            add_index(schema_editor, model, self.index)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            remove_index(schema_editor, model, self.index)

    def describe(self) -> str:
        return f"Concurrently create index {self.index.name} on {self.model_name}"


class AddTableIndexConcurrently(Operation):
    """An index on another app's table (`model`: "app_label.ModelName"), built
    concurrently on PostgreSQL, in the database only: that app's models do not
    declare it, so its own migrations neither see nor drop it (the task table
    of django-tasks-db, whose queries the heartbeat and health probes run)."""

    atomic = False
    reversible = True

    def __init__(self, model: str, index):
        self.model = model
        self.index = index

    def state_forwards(self, app_label, state) -> None:
        pass  # the database only

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(self.model)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            add_index(schema_editor, model, self.index)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(self.model)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            remove_index(schema_editor, model, self.index)

    def describe(self) -> str:
        return f"Concurrently create index {self.index.name} on {self.model}"

    @property
    def migration_name_fragment(self) -> str:
        return self.index.name.lower()
