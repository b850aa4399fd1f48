"""Error reports (SENTRY_DSN, tictactoe_site.ops.sentry), against a local HTTP server
standing in for Sentry's ingest: a page's 500, a stream's failure and a failed
task arrive with the request id, route and user id and nothing else about the
person; a refused move (4xx) does not arrive; without SENTRY_DSN, sentry_sdk is
never imported."""

import gzip
import http.client
import json
import os
import queue
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import OperationalError

from tictactoe_site.lib.env import ConfigurationError
from tictactoe_site.ops import sentry

from ..support import hosts
from ..support.served import ROOT
from .test_env import load_settings

DEADLINE = 30  # seconds for an event to arrive


def envelope_items(body: bytes):
    """(type, payload) of each item of a Sentry envelope: a header line, then
    per item a header line and its payload (`length` bytes, or one line)."""
    _, _, rest = body.partition(b"\n")
    while rest.strip():
        header, _, rest = rest.partition(b"\n")
        meta = json.loads(header)
        if "length" in meta:
            payload, rest = rest[: meta["length"]], rest[meta["length"] + 1 :]
        else:
            payload, _, rest = rest.partition(b"\n")
        yield meta["type"], payload


class Ingest:
    """A threaded HTTP server that takes envelopes as Sentry's would and keeps
    the events they carry, in the order they came."""

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        # Every envelope as it came, whatever its items.
        self.bodies: list[bytes] = []
        events, bodies = self.events, self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                bodies.append(body)
                for kind, payload in envelope_items(body):
                    if kind == "event":
                        events.put(json.loads(payload))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.dsn = f"http://public@127.0.0.1:{self.server.server_address[1]}/1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next_event(self) -> dict:
        return self.events.get(timeout=DEADLINE)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ingest():
    server = Ingest()
    yield server
    server.close()


def python(script: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def exception_of(event: dict) -> tuple[str, str]:
    (exception,) = event["exception"]["values"]
    return exception["type"], exception["value"]


# -- nothing without SENTRY_DSN ------------------------------------------------------

LOADS_THE_SERVER_AND_THE_WORKER = """
import sys
import tictactoe_site.server.asgi
from django.test import Client
from tictactoe_site.ops import sentry
from tictactoe_site.jobs import heartbeat
sentry.start()
Client().get("/accounts/login/")
print("sentry_sdk" in sys.modules)
"""


@pytest.mark.processes
def test_without_a_dsn_sentry_sdk_is_never_imported(tmp_path):
    database = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    result = python(LOADS_THE_SERVER_AND_THE_WORKER, **database)
    assert (result.returncode, result.stdout) == (0, "False\n"), result.stderr
    with_dsn = python(
        LOADS_THE_SERVER_AND_THE_WORKER,
        SENTRY_DSN="http://public@127.0.0.1:9/1",
        **database,
    )
    assert (with_dsn.returncode, with_dsn.stdout) == (0, "True\n"), with_dsn.stderr


@pytest.mark.parametrize(
    "dsn",
    [
        "sentry.example.com/1",
        "ftp://key@sentry.example.com/1",
        "https://sentry.example.com/1",  # no key
        "https://key@/1",  # no host
        "https://key@sentry.example.com/",  # no project
        "https://key@sentry.example.com/project",
        "https://key@sentry.example.com:port/1",
    ],
)
def test_the_settings_refuse_what_is_not_a_dsn(monkeypatch, dsn):
    with pytest.raises(ConfigurationError) as refused:
        load_settings(monkeypatch, SENTRY_DSN=dsn)
    assert str(refused.value) == (
        "SENTRY_DSN is not a Sentry DSN: it looks like "
        "https://<key>@<host>/<project number> (the project's Client Keys page)."
    )


@pytest.mark.parametrize(
    "dsn",
    [
        "https://0123abcd@o42.ingest.sentry.io/4507",
        "http://public:secret@127.0.0.1:9000/1",
        "https://key@glitchtip.example.com/sentry/3",
    ],
)
def test_the_settings_take_a_dsn(monkeypatch, dsn):
    assert load_settings(monkeypatch, SENTRY_DSN=dsn)["SENTRY_DSN"] == dsn


# -- what a report holds -------------------------------------------------------------


def test_an_outage_is_not_reported():
    error = OperationalError("connection refused")
    assert sentry.before_send({}, {"exc_info": (OperationalError, error, None)}) is None


def test_a_report_holds_no_invitations_secret():
    """Whatever text holds one: an exception's, a log record's request."""
    event = {
        "exception": {"values": [{"type": "Bug", "value": "at /invitations/7/s3c/"}]},
        "extra": {"request": "<WSGIRequest: GET '/invitations/7/s3c/join/'>"},
    }
    assert sentry.before_send(event, {}) == {
        "exception": {"values": [{"type": "Bug", "value": "at /invitations/7/…/"}]},
        "extra": {"request": "<WSGIRequest: GET '/invitations/7/…/join/'>"},
        "tags": {},
    }


# -- pages, streams and the worker ---------------------------------------------------

FAILED_TASK = """
from tictactoe_site.jobs.mail import deliver
deliver.enqueue("not a message")
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.processes
def test_a_500_and_a_failed_task_arrive_and_a_refusal_does_not(backend, ingest):
    with hosts.serving(
        backend,
        1,
        DJANGO_SETTINGS_MODULE="tests.support.failing_settings",
        DJANGO_TRUSTED_PROXY_COUNT="1",
        SENTRY_DSN=ingest.dsn,
    ) as (ports, _):
        (port,) = ports
        sessions, versions = hosts.games(backend, 1)
        (game_id,) = versions
        # alice is to move: bob's move is refused.
        assert hosts.play(port, sessions["bob"], game_id, 0, 0, 0) == 403
        # A scanner's request for another host (Django logs an error).
        assert status_for_host(port, "evil.example") == 400
        for request_id in ("boom-1", "boom-2"):
            connection, answer = request(port, sessions["alice"], request_id)
            assert (answer.status, answer.getheader("X-Request-ID")) == (
                500,
                request_id,
            )
            connection.close()
        alice = user_id(backend, "alice")

        # In order: nothing for the refusals, one event per 500.
        for request_id in ("boom-1", "boom-2"):
            event = ingest.next_event()
            assert exception_of(event) == (
                "Bug",
                "a page that fails, for the tests",
            )
            assert {key: event["tags"][key] for key in ("request_id", "route")} == {
                "request_id": request_id,
                "route": "failing",
            }
            assert event["user"] == {"id": str(alice)}
            assert event["request"] == {"method": "GET"}
            assert "sessionid" not in json.dumps(event)
            assert "s3cret-cookie" not in json.dumps(event)

        hosts.manage(backend, "shell", "-c", FAILED_TASK)
        event = ingest.next_event()
        assert exception_of(event) == (
            "AttributeError",
            "'str' object has no attribute 'get'",
        )
        assert event["tags"]["task"] == "tictactoe_site.jobs.mail.deliver"
    assert ingest.events.empty()


def request(port: int, session: str, request_id: str):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=hosts.BOUND)
    connection.request(
        "GET",
        "/failing/",
        headers={
            "Cookie": f"sessionid={session}; other=s3cret-cookie",
            "X-Request-ID": request_id,
        },
    )
    return connection, connection.getresponse()


def status_for_host(port: int, host: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=hosts.BOUND)
    try:
        connection.request("GET", "/accounts/login/", headers={"Host": host})
        return connection.getresponse().status
    finally:
        connection.close()


def user_id(backend, username: str) -> int:
    script = (
        "from django.contrib.auth import get_user_model; "
        f"print(get_user_model().objects.get(username={username!r}).pk)"
    )
    return int(hosts.manage(backend, "shell", "-c", script).splitlines()[-1])


A_STREAM_THAT_FAILS = """
import asyncio
import django

django.setup()
import sentry_sdk
from tictactoe_site.ops import middleware
from tictactoe_site.ops import sentry

sentry.start()


async def broken(scope, receive, send):
    raise RuntimeError("a stream that fails")


scope = {
    "type": "http",
    "method": "GET",
    "path": "/games/5/events/",
    "headers": [(b"x-request-id", b"stream-9")],
}
try:
    asyncio.run(middleware.serve_stream(broken, scope, None, None, "game_events"))
except RuntimeError:
    print("raised")
sentry_sdk.flush(10)
"""


@pytest.mark.processes
def test_a_streams_failure_arrives_with_its_request_id_and_route(ingest, tmp_path):
    result = python(
        A_STREAM_THAT_FAILS,
        SENTRY_DSN=ingest.dsn,
        DJANGO_TRUSTED_PROXY_COUNT="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
    )
    assert (result.returncode, result.stdout) == (0, "raised\n"), result.stderr
    event = ingest.next_event()
    assert exception_of(event) == ("RuntimeError", "a stream that fails")
    assert {key: event["tags"][key] for key in ("request_id", "route")} == {
        "request_id": "stream-9",
        "route": "game_events",
    }
    assert ingest.events.empty()


AN_EMAIL_GIVEN_UP = """
import django

django.setup()
import sentry_sdk
from django.test import override_settings
from tictactoe_site.ops import sentry
from tictactoe_site.jobs.mail import ATTEMPTS, deliver
from tests.tictactoe_site.test_mail_queue import REFUSING, queued_message

sentry.start()
with override_settings(MAILERS=REFUSING):
    print(deliver.call(queued_message(request_id="mail-7"), ATTEMPTS))
sentry_sdk.flush(10)
"""


@pytest.mark.processes
def test_an_email_given_up_arrives_with_the_request_that_queued_it(ingest, tmp_path):
    result = python(
        AN_EMAIL_GIVEN_UP,
        SENTRY_DSN=ingest.dsn,
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
    )
    assert (result.returncode, result.stdout) == (0, "given up\n"), result.stderr
    event = ingest.next_event()
    assert event["logentry"]["message"].startswith("Email %r to %s not sent after")
    assert event["logger"] == "tictactoe_site.jobs.mail"
    assert event["tags"]["request_id"] == "mail-7"
    assert ingest.events.empty()


PEOPLE_AND_A_FAILED_MAIL = """
import logging
import django

django.setup()
import sentry_sdk
from django.contrib.auth import get_user_model
from django.test import override_settings
from games import services
from tictactoe_site.ops import sentry
from tictactoe_site.jobs.mail import ATTEMPTS, deliver
from tests.tictactoe_site.test_mail_queue import REFUSING, queued_message

sentry.start()
users = get_user_model().objects
alice = users.create_user("alice-liddell", "alice@wonder.example")
bob = users.create_user("bob-marley", "bob@wonder.example")
game = services.create_game(creator=alice, opponent=bob, side="x")
services.play_move(game_id=game.pk, user=alice, row=0, col=0)
# A line for the log alone, as a library may write one.
logging.getLogger("elsewhere").warning("signed in as %s", "alice-liddell")
with override_settings(MAILERS=REFUSING):
    print(deliver.call(queued_message(to=["alice@wonder.example"]), ATTEMPTS))
logging.getLogger("games").error("failed at %s", "/invitations/7/s3cret-of-a-link/")
sentry_sdk.flush(10)
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.processes
def test_a_report_names_no_player_and_no_address(backend, ingest):
    """After a game's lines, a line that names a player and an email given up:
    the reports of two ERROR lines, without breadcrumbs (the lines before
    them) or an invitation's secret."""
    result = python(PEOPLE_AND_A_FAILED_MAIL, SENTRY_DSN=ingest.dsn, **backend)
    assert (result.returncode, result.stdout) == (0, "given up\n"), result.stderr
    mail, failure = ingest.next_event(), ingest.next_event()
    assert (mail["logger"], failure["logger"]) == ("tictactoe_site.jobs.mail", "games")
    assert mail["logentry"]["message"].startswith("Email %r to %s not sent after")
    assert failure["logentry"]["formatted"] == "failed at /invitations/7/\u2026/"
    breadcrumbs = [
        event.get("breadcrumbs", {}).get("values") for event in (mail, failure)
    ]
    assert breadcrumbs in ([[], []], [None, None])
    assert ingest.events.empty()
    assert len(ingest.bodies) == 2
    for body in ingest.bodies:
        for personal in ("alice-liddell", "bob-marley", "wonder.example"):
            assert personal.encode() not in body
        assert b"s3cret-of-a-link" not in body
