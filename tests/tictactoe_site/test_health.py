"""The health probes (tictactoe_site.ops.health): /livez says the process serves,
/readyz (and /healthz, the same) that it can serve pages now (its database
answers, its live listener is connected), /workerz that the task worker beats.
Whatever the Host header, over plain HTTP, never with a session, a cookie or a
log line when healthy."""

import asyncio
import http.client
import logging
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connections
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from games.live.hub import hub
from tictactoe_site.jobs.heartbeat import beat as heartbeat_task
from tictactoe_site.ops import health

from ..support.asgi import Stream
from ..support.served import ROOT, free_port, serving

READINESS = ["/readyz", "/healthz"]
PROBES = ["/livez", *READINESS, "/workerz"]
NOT_IN_ALLOWED_HOSTS = ["10.0.0.7", "evil.example"]


@pytest.fixture
def database_down(monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connections["default"], "cursor", refuse)


@pytest.fixture
def listener(monkeypatch):
    """This process's hub as the server runs it (started on a loop); the test
    says whether its listener is connected."""
    monkeypatch.setattr(hub, "loop", asyncio.new_event_loop())
    monkeypatch.setattr(hub, "listening", asyncio.Event())
    yield hub.listening
    hub.loop.close()


def answer(response) -> tuple[int, str, bytes]:
    return response.status_code, response["Content-Type"], response.content


# -- readiness -----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_ready_answers_200_with_one_query(client, path, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = client.get(path)
    assert answer(response) == (200, "text/plain", b"ok\n")
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_ready_does_not_depend_on_the_task_worker(client, path):
    assert not DBTaskResult.objects.exists()  # no worker ever beat
    assert answer(client.get(path)) == (200, "text/plain", b"ok\n")


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_ready_answers_503_while_the_database_does_not(client, path, database_down):
    assert answer(client.get(path)) == (503, "text/plain", b"database unavailable\n")


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_ready_answers_503_while_the_live_listener_is_not_connected(
    client, path, listener
):
    assert answer(client.get(path)) == (
        503,
        "text/plain",
        b"live updates not connected\n",
    )
    listener.set()
    assert answer(client.get(path)) == (200, "text/plain", b"ok\n")


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_ready_does_not_wait_for_a_listener_on_redis(client, path, listener, settings):
    """Redis is shared by every host: its outage must not take them all out of
    service while every page still works."""
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert answer(client.get(path)) == (200, "text/plain", b"ok\n")


@pytest.mark.processes
def test_postgresql_down_answers_503_through_the_pool():
    """For real: a pooled PostgreSQL connection to a port where nothing listens."""
    script = (
        "from django.test import Client; r = Client().get('/readyz'); "
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
    assert "readiness: the database does not answer" in result.stderr


# -- liveness ------------------------------------------------------------------


@pytest.mark.django_db
def test_live_answers_200_without_a_query(client, database_down):
    response = client.get("/livez")
    assert answer(response) == (200, "text/plain", b"ok\n")
    assert "no-cache" in response["Cache-Control"]


def test_live_is_answered_on_the_event_loop_without_the_database(database_down):
    """Through the ASGI application, as the server runs it: no page thread."""

    async def probe(method: str) -> tuple[int, dict, bytes]:
        return await Stream("/livez", method=method).response()

    status, headers, body = asyncio.run(probe("GET"))
    assert (status, body) == (200, b"ok\n")
    assert headers == {
        "content-type": "text/plain",
        "content-length": "3",
        "cache-control": "max-age=0, no-cache, no-store, must-revalidate, private",
    }
    assert asyncio.run(probe("HEAD"))[::2] == (200, b"")
    status, headers, body = asyncio.run(probe("POST"))
    assert (status, headers["allow"], body) == (405, "GET, HEAD", b"")


# -- the task worker -----------------------------------------------------------


@pytest.mark.usefixtures("worker_beating")
def test_worker_answers_200_while_it_beats(client):
    assert answer(client.get("/workerz")) == (200, "text/plain", b"ok\n")


@pytest.mark.django_db
def test_a_worker_that_never_beat_answers_503(client):
    assert answer(client.get("/workerz")) == (
        503,
        "text/plain",
        b"task worker unavailable: no task worker has reported yet "
        b"(email waits in the queue)\n",
    )


@pytest.mark.usefixtures("worker_beating")
def test_a_worker_silent_for_more_than_a_minute_answers_503(client):
    beat = DBTaskResult.objects.get(
        status="SUCCESSFUL", task_path=heartbeat_task.module_path
    )
    beat.finished_at = timezone.now() - timedelta(seconds=61)
    beat.save()
    assert answer(client.get("/workerz")) == (
        503,
        "text/plain",
        b"task worker unavailable: the task worker has been silent for 61 s "
        b"(email waits in the queue)\n",
    )
    assert client.get("/readyz").status_code == 200  # the host still serves
    beat.finished_at = timezone.now() - timedelta(seconds=50)
    beat.save()
    assert client.get("/workerz").status_code == 200


@pytest.mark.django_db
def test_worker_answers_503_while_the_database_does_not(client, database_down):
    assert answer(client.get("/workerz")) == (
        503,
        "text/plain",
        b"database unavailable\n",
    )


# -- every probe ---------------------------------------------------------------


@pytest.mark.usefixtures("worker_beating")
@pytest.mark.parametrize("path", PROBES)
def test_no_probe_reads_or_sets_a_session(
    client_for, alice, path, django_assert_max_num_queries
):
    client = client_for(alice)
    with django_assert_max_num_queries(1) as context:
        response = client.get(path)
    assert response.status_code == 200
    assert not [q for q in context.captured_queries if "django_session" in q["sql"]]
    assert not response.cookies
    assert "Vary" not in response


@pytest.mark.usefixtures("worker_beating")
@pytest.mark.parametrize("path", PROBES)
def test_every_probe_allows_head_and_refuses_writes(client, path):
    assert client.head(path).status_code == 200
    for method in (client.post, client.put, client.delete):
        response = method(path)
        assert response.status_code == 405
        assert response["Allow"] == "GET, HEAD"


@pytest.mark.usefixtures("worker_beating")
@pytest.mark.parametrize("host", NOT_IN_ALLOWED_HOSTS)
@pytest.mark.parametrize("path", PROBES)
def test_every_probe_answers_any_host_without_a_log_line(client, caplog, path, host):
    """A load balancer probes by IP: ALLOWED_HOSTS does not name it."""
    with caplog.at_level(logging.DEBUG):
        response = client.get(path, headers={"host": host})
    assert answer(response) == (200, "text/plain", b"ok\n")
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert client.get("/accounts/login/", headers={"host": host}).status_code == 400


# -- against `make serve` ------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served_health")
    with serving(tmp_dir, "health", workers=2, make_serve=True) as app:
        yield app


def probe(port: int, method: str, path: str, host: str) -> http.client.HTTPResponse:
    """Plain HTTP, by IP, as a load balancer probes (no X-Forwarded-Proto)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, headers={"Host": host})
        response = connection.getresponse()
        response.body = response.read()
        return response
    finally:
        connection.close()


@pytest.mark.processes
def test_make_serve_answers_probes_by_ip_over_plain_http(served):
    """DJANGO_SECURE_SSL_REDIRECT=1 and ALLOWED_HOSTS=127.0.0.1: a page by IP
    is a 400, the probes answer 200 with nothing logged."""
    deadline = time.monotonic() + 60
    while probe(served.port, "GET", "/workerz", "10.0.0.7").status != 200:
        assert time.monotonic() < deadline, "the task worker never beat"
        time.sleep(0.2)  # polling for the worker's first beat, bounded
    logged_before = len(served.log())
    for host in NOT_IN_ALLOWED_HOSTS:
        for path in PROBES:
            for _ in range(3):  # whichever process answers
                response = probe(served.port, "GET", path, host)
                assert (response.status, response.body) == (200, b"ok\n"), path
                assert response.getheader("Set-Cookie") is None
                assert response.getheader("Vary") is None
            head = probe(served.port, "HEAD", path, host)
            assert (head.status, head.body) == (200, b"")
    logged = served.log()[logged_before:]
    assert " ERROR " not in logged, logged
    assert " WARNING " not in logged, logged
    page = probe(served.port, "GET", "/accounts/login/", "10.0.0.7")
    assert page.status == 400


@pytest.mark.django_db
@pytest.mark.parametrize("path", READINESS)
def test_an_unready_probe_logs_one_warning_and_no_error(
    client, caplog, path, database_down
):
    """A load balancer probes every few seconds: during an outage each probe
    says why once, as a warning, and Django's request log adds no ERROR."""
    with caplog.at_level(logging.DEBUG):
        assert client.get(path).status_code == 503
    logged = [
        (r.name, r.levelname) for r in caplog.records if r.levelno >= logging.WARNING
    ]
    assert logged == [("tictactoe_site.ops.health", "WARNING")]


def test_the_request_log_leaves_out_exactly_the_probes():
    assert (
        set(health.PROBES)
        == health.PATHS
        == {
            "/livez",
            "/readyz",
            "/healthz",
            "/workerz",
        }
    )
