"""No request stalls another, against the app as `make serve` runs it with one
server process (so the slow request and the stream share it), the production
password hasher and a mail relay that never answers:

- while a login runs the real password hasher, and while password resets are
  asked for, a move's event reaches a live stream open on that process within
  100 ms;
- a reset answers in the same time whether or not the address has an account
  (its email waits for the task worker, never for the relay in the request).
"""

import http.client
import re
import socket
import statistics
import threading
import time

import pytest

from ..support.served import serving
from ..support.smtp_sink import SmtpSink

pytestmark = [pytest.mark.processes, pytest.mark.timing]

# The account routes and their fields (one place: the account pages may move).
LOGIN_URL, LOGIN_FIELDS = "/accounts/login/", ("login", "password")
RESET_URL, RESET_FIELD = "/accounts/password/reset/", "email"

EVENT_WITHIN = 0.100  # seconds from the move's POST to its event on the stream
DEADLINE = 30  # seconds: the waits below end on events, this only bounds them
CAROL_PASSWORD = "carol-has-a-long-password-7"
CREATE_CAROL = (
    "from allauth.account.models import EmailAddress\n"
    "from django.contrib.auth import get_user_model\n"
    "carol = get_user_model().objects.create_user('carol', 'carol@example.com', "
    f"{CAROL_PASSWORD!r})\n"
    "EmailAddress.objects.create(user=carol, email='carol@example.com', "
    "verified=True, primary=True)\n"
)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with (
        SmtpSink(silent=True) as relay,
        serving(
            tmp_path_factory.mktemp("stall"),
            "stall",
            workers=1,
            DJANGO_EMAIL_HOST="127.0.0.1",
            DJANGO_EMAIL_PORT=str(relay.port),
            DJANGO_PASSWORD_RESET_LIMIT="0",
            DJANGO_LOGIN_FAILURE_LIMIT="0",
        ) as app,
    ):
        result = app.manage("shell", "-c", CREATE_CAROL)
        assert result.returncode == 0, result.stderr
        yield app


class EventStream:
    """A live stream read in a thread: when each version's event arrived."""

    def __init__(self, port: int, path: str, session_key: str):
        self.arrived: dict[int, float] = {}
        self.changed = threading.Condition()
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.connection.request(
            "GET",
            path,
            headers={
                "Cookie": f"sessionid={session_key}",
                "X-Forwarded-Proto": "https",
                "Accept": "text/event-stream",
            },
        )
        response = self.connection.getresponse()
        assert response.status == 200
        self.response = response
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                if line.startswith(b"id:"):
                    at = time.monotonic()
                    with self.changed:
                        self.arrived[int(line[3:])] = at
                        self.changed.notify_all()
        except (OSError, ValueError, AttributeError):
            return  # closed by the test (http.client drops its file: None.peek)

    def arrival_of(self, version: int) -> float | None:
        with self.changed:
            self.changed.wait_for(lambda: version in self.arrived, DEADLINE)
            return self.arrived.get(version)

    def close(self) -> None:
        # Wake the reader first: blocked in readline, it holds the response's
        # lock, which close() would wait on until the next keep-alive ping.
        self.connection.sock.shutdown(socket.SHUT_RDWR)
        self.connection.close()


@pytest.fixture
def game(app):
    """alice (X) against bob, each logged in, with bob's stream open."""
    keys = app.sessions_for(["alice", "bob"])
    alice, bob = app.browser(keys["alice"]), app.browser(keys["bob"])
    for browser in (alice, bob):
        assert browser.get("/").status == 200  # the CSRF cookie
    response = alice.post("/games/new/", {"opponent": "bob", "side": "x"})
    assert response.status == 302, response.text
    game_id = int(re.fullmatch(r"/games/(\d+)/", response.headers["Location"])[1])
    stream = EventStream(app.port, f"/games/{game_id}/events/", keys["bob"])
    yield game_id, alice, bob, stream
    stream.close()


class Repeating:
    """Sends one request after another in a thread; `in_flight` is set while
    one is on its way or being answered."""

    def __init__(self, send):
        self.send = send
        self.in_flight = threading.Event()
        self.stopping = threading.Event()
        self.statuses: list[int] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.in_flight.set()
            self.statuses.append(self.send())
            self.in_flight.clear()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopping.set()
        self.thread.join(DEADLINE)


def event_delays(game, during: Repeating, moves) -> list[float]:
    """Each move (by alice, then bob, ...) sent while `during` has a request in
    flight; how long its event took to reach bob's stream."""
    game_id, alice, bob, stream = game
    players = [alice, bob]
    delays = []
    for number, (row, col) in enumerate(moves):
        assert during.in_flight.wait(DEADLINE)
        sent = time.monotonic()
        response = players[number % 2].post(
            f"/games/{game_id}/move/", {"row": row, "col": col}
        )
        assert response.status == 302, response.text
        arrived = stream.arrival_of(number + 2)  # version 1 is the new game
        assert arrived is not None, f"move {number + 1}: no event"
        delays.append(arrived - sent)
    return delays


def test_a_login_hashing_its_password_does_not_delay_a_live_event(app, game):
    login = app.browser()
    assert login.get(LOGIN_URL).status == 200  # the CSRF cookie
    username_field, password_field = LOGIN_FIELDS
    fields = {username_field: "carol", password_field: CAROL_PASSWORD}

    with Repeating(lambda: login.post(LOGIN_URL, fields).status) as logins:
        delays = event_delays(game, logins, [(0, 0), (1, 1), (0, 1), (2, 2)])

    assert set(logins.statuses) == {302}, "every login succeeded"
    assert max(delays) < EVENT_WITHIN, [f"{d * 1000:.0f} ms" for d in delays]


def test_a_reset_with_a_relay_that_never_answers_does_not_delay_anything(app, game):
    reset = app.browser()
    assert reset.get(RESET_URL).status == 200

    def ask() -> int:
        started = time.monotonic()
        status = reset.post(RESET_URL, {RESET_FIELD: "carol@example.com"}).status
        took.append(time.monotonic() - started)
        return status

    took: list[float] = []
    with Repeating(ask) as resets:
        delays = event_delays(game, resets, [(0, 0), (1, 1), (0, 1), (2, 2)])

    assert set(resets.statuses) == {302}
    assert max(took) < 1.0, "a reset never waits for the relay (10 s timeout)"
    assert max(delays) < EVENT_WITHIN, [f"{d * 1000:.0f} ms" for d in delays]


def test_a_reset_takes_as_long_for_an_unknown_address_as_for_a_known_one(app):
    browser = app.browser()
    assert browser.get(RESET_URL).status == 200
    times: dict[str, list[float]] = {"carol@example.com": [], "nobody@example.com": []}
    for _ in range(30):
        for address, took in times.items():  # interleaved: drift hits both alike
            started = time.perf_counter()
            response = browser.post(RESET_URL, {RESET_FIELD: address})
            took.append(time.perf_counter() - started)
            assert response.status == 302

    known, unknown = (statistics.median(took) for took in times.values())
    assert abs(known - unknown) < 0.005, (
        f"{known * 1000:.1f} vs {unknown * 1000:.1f} ms"
    )
