"""GET /healthz: 200 when the database answers and the task worker beats, 503
with the reason when not; never a session."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import OperationalError, connections
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tictactoe_site.heartbeat import beat as heartbeat_task

from .support.served import ROOT, free_port


@pytest.mark.usefixtures("worker_beating")
def test_healthy_database_answers_200_with_one_query(client, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain"
    assert response.content == b"ok\n"
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.usefixtures("worker_beating")
def test_health_check_neither_reads_nor_sets_a_session(
    client_for, alice, django_assert_num_queries
):
    client = client_for(alice)
    with django_assert_num_queries(1) as context:
        response = client.get("/healthz")
    assert response.status_code == 200
    assert "django_session" not in context.captured_queries[0]["sql"]
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


@pytest.mark.usefixtures("worker_beating")
def test_health_check_needs_no_login_and_allows_head(client):
    assert client.head("/healthz").status_code == 200


@pytest.mark.usefixtures("worker_beating")
def test_health_check_refuses_writes(client):
    response = client.post("/healthz")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.usefixtures("worker_beating")
def test_a_worker_that_never_beat_answers_503(client):
    DBTaskResult.objects.all().delete()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.content == (
        b"task worker unavailable: no task worker has reported yet "
        b"(email waits in the queue)\n"
    )


@pytest.mark.usefixtures("worker_beating")
def test_a_worker_silent_for_more_than_a_minute_answers_503(client):
    beat = DBTaskResult.objects.get(
        status="SUCCESSFUL", task_path=heartbeat_task.module_path
    )
    beat.finished_at = timezone.now() - timedelta(seconds=61)
    beat.save()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.content == (
        b"task worker unavailable: the task worker has been silent for 61 s "
        b"(email waits in the queue)\n"
    )
    beat.finished_at = timezone.now() - timedelta(seconds=50)
    beat.save()
    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_unreachable_database_answers_503(client, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.content == b"database unavailable\n"
    assert not response.cookies


def test_postgresql_down_answers_503_through_the_pool():
    """For real: a pooled PostgreSQL connection to a port where nothing listens."""
    script = (
        "from django.test import Client; r = Client().get('/healthz'); "
        "print(r.status_code, r.content.decode().strip(), sorted(r.cookies))"
    )
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/nothing",
        "DJANGO_DB_POOL_TIMEOUT": "1",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.splitlines()[-1] == "503 database unavailable []"
    assert "health check: the database does not answer" in result.stderr
