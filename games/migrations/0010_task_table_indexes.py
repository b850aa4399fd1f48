"""Indexes on django-tasks-db's task table for the queries the worker's
heartbeat and the /workerz probe run on it (tictactoe_site.jobs.heartbeat): by task
and status, latest finish first (the last beat, the periodic jobs, pruning the
beats), and by finish time (pruning every result a day old). Built
concurrently on PostgreSQL (docs/operations.md, "Migrations on large tables")."""

from django.db import migrations, models

from tictactoe_site.lib.migration_operations import AddTableIndexConcurrently

TASKS = "django_tasks_database.DBTaskResult"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("games", "0009_site_identity"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [
        AddTableIndexConcurrently(
            TASKS,
            models.Index(
                fields=["task_path", "status", "-finished_at"],
                name="tasks_path_status_finished",
            ),
        ),
        AddTableIndexConcurrently(
            TASKS, models.Index(fields=["finished_at"], name="tasks_finished_at")
        ),
    ]
