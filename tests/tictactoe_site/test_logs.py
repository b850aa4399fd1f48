"""Structured logs (DJANGO_LOG_FORMAT=json, tictactoe_site.ops.logs) and request ids
(tictactoe_site.ops.middleware): one JSON object per line, each naming its request,
user and route; the id from a trusted proxy's X-Request-ID or made fresh,
echoed in the response and carried by a queued email to the worker's lines.
Checked by parsing the lines, in-process and from a served app's output."""

import contextlib
import http.client
import io
import json
import logging
import re
from pathlib import Path

import pytest
from django.core import mail
from django_tasks_db.models import DBTaskResult

from games import services
from tictactoe_site.jobs.mail import ATTEMPTS, deliver
from tictactoe_site.lib.env import ConfigurationError
from tictactoe_site.ops.logs import JsonLines, RequestContext, bound

from ..support import fleet, hosts
from ..support.account_client import ask_for_reset, confirmed
from ..support.asgi import Stream, run, sessionid
from .test_env import assert_refused, load_settings, start
from .test_mail_queue import REFUSING

FRESH = re.compile(r"[0-9a-f]{32}")
LINE_FIELDS = {"time", "level", "logger", "message", "request_id", "user_id", "route"}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


@pytest.fixture
def json_lines():
    """The lines of the app's loggers as DJANGO_LOG_FORMAT=json writes them,
    access lines included; a function that returns them parsed."""
    output = io.StringIO()
    handler = logging.StreamHandler(output)
    handler.setFormatter(JsonLines())
    loggers = [logging.getLogger(name) for name in ("tictactoe_site", "games")]
    access = logging.getLogger("tictactoe_site.access")
    level = access.level
    access.setLevel(logging.INFO)
    for logger in loggers:
        logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in output.getvalue().splitlines()]
    for logger in loggers:
        logger.removeHandler(handler)
    access.setLevel(level)


@pytest.fixture
def behind_a_proxy(settings):
    settings.TRUSTED_PROXY_COUNT = 1


def access_lines(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "tictactoe_site.access"]


# settings.LOGGING's text format.
TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"


@contextlib.contextmanager
def console_output(log_format: str):
    """Every record of every logger, each at its lowest level, as the configured
    console handler (settings.LOGGING, its filters included) writes it in
    `log_format` ("text" or "json"); yields a function that returns the text."""
    console = logging.getHandlerByName("console")
    output = io.StringIO()
    loggers = [logging.root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    levels = [logger.level for logger in loggers]
    stream = console.setStream(output)
    formatter = console.formatter
    json_format = log_format == "json"
    console.setFormatter(JsonLines() if json_format else logging.Formatter(TEXT))
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    try:
        yield output.getvalue
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        console.setFormatter(formatter)
        console.setStream(stream)


# -- the format ----------------------------------------------------------------


def test_a_line_is_one_json_object_with_the_request_it_belongs_to(json_lines):
    logger = logging.getLogger("tictactoe_site.test")
    with bound(RequestContext("req-1", route="lobby", user_id=7)):
        logger.warning("the relay said %s", "no")
    logger.info("outside any request")
    first, second = json_lines()
    assert TIME.fullmatch(first.pop("time"))
    assert first == {
        "level": "WARNING",
        "logger": "tictactoe_site.test",
        "message": "the relay said no",
        "request_id": "req-1",
        "user_id": 7,
        "route": "lobby",
    }
    assert set(second) == LINE_FIELDS
    assert second["request_id"] is second["user_id"] is second["route"] is None


def test_a_line_has_the_traceback_and_no_other_attribute(json_lines):
    logger = logging.getLogger("tictactoe_site.test")
    try:
        raise ValueError("broken")
    except ValueError:
        # A request object, as django.request passes one: its path may hold an
        # invitation's secret.
        logger.exception("failed", extra={"request": "GET /invitations/1/s3cret/"})
    (line,) = json_lines()
    assert set(line) == LINE_FIELDS | {"exc_info"}
    assert line["exc_info"].startswith("Traceback (most recent call last):")
    assert line["exc_info"].endswith("ValueError: broken")
    assert "s3cret" not in json.dumps(line)


def test_the_settings_take_text_or_json_and_refuse_anything_else(monkeypatch):
    text = load_settings(monkeypatch)
    assert text["LOG_FORMAT"] == "text"
    assert text["LOGGING"]["formatters"]["plain"] == {
        "format": "%(asctime)s %(levelname)s %(name)s %(message)s"
    }
    assert text["LOGGING"]["loggers"]["tictactoe_site.access"] == {"level": "WARNING"}
    json_mode = load_settings(monkeypatch, DJANGO_LOG_FORMAT="json")
    assert json_mode["LOGGING"]["formatters"]["plain"] == {
        "()": "tictactoe_site.ops.logs.JsonLines"
    }
    assert json_mode["LOGGING"]["loggers"]["tictactoe_site.access"] == {"level": "INFO"}
    with pytest.raises(ConfigurationError) as refused:
        load_settings(monkeypatch, DJANGO_LOG_FORMAT="JSON")
    assert str(refused.value) == (
        "DJANGO_LOG_FORMAT must be one of text, json, not 'JSON'."
    )


@pytest.mark.processes
def test_the_server_refuses_an_unknown_format():
    assert_refused(
        start("tictactoe_site.server.serve", DJANGO_LOG_FORMAT="xml"),
        "DJANGO_LOG_FORMAT must be one of text, json, not 'xml'.",
    )


# -- request ids -----------------------------------------------------------------


@pytest.mark.parametrize(
    "sent", ["4f1c2a0e9b7d4c3a8e6f5d2c1b0a9e8f", "a", "req.1_2-3", "x" * 64]
)
def test_a_trusted_proxys_valid_id_is_taken_and_echoed(
    client, db, behind_a_proxy, json_lines, sent
):
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID=sent)
    assert response.status_code == 200
    assert response["X-Request-ID"] == sent
    (line,) = access_lines(json_lines())
    assert line["request_id"] == sent


@pytest.mark.parametrize(
    "sent", ["", "x" * 65, "has space", "semi;colon", "ünïcode", "a/b", "a\tb"]
)
def test_an_invalid_id_is_replaced_by_a_fresh_one(client, db, behind_a_proxy, sent):
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID=sent)
    assert response.status_code == 200
    assert FRESH.fullmatch(response["X-Request-ID"])


def test_without_a_trusted_proxy_the_header_is_a_claim_and_not_taken(client, db):
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID="chosen-by-client")
    assert FRESH.fullmatch(response["X-Request-ID"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_hub")
@pytest.mark.parametrize(("proxies", "taken"), [(0, False), (1, True)])
def test_a_stream_takes_the_clients_id_only_behind_a_trusted_proxy(
    game, bob, client_for, settings, json_lines, proxies, taken
):
    settings.TRUSTED_PROXY_COUNT = proxies
    cookie = sessionid(client_for(bob))

    async def scenario():
        stream = Stream(
            f"/games/{game.pk}/events/?v={game.version}",
            cookie=cookie,
            headers=[("x-request-id", "attacker")],
        )
        status, headers, _ = await stream.response()
        await stream.close()
        return status, headers["x-request-id"]

    status, request_id = run(scenario())
    assert status == 200
    if taken:
        assert request_id == "attacker"
    else:
        assert FRESH.fullmatch(request_id)
    (line,) = access_lines(json_lines())
    assert (line["route"], line["request_id"]) == ("game_events", request_id)


def test_each_request_gets_an_id_of_its_own(client, db):
    ids = {client.get("/accounts/login/")["X-Request-ID"] for _ in range(3)}
    assert len(ids) == 3


def test_a_probe_has_no_id_and_no_line(client, db, json_lines):
    response = client.get("/livez")
    assert response.status_code == 200
    assert "X-Request-ID" not in response
    assert json_lines() == []


# -- the access line -------------------------------------------------------------


def test_a_page_has_one_access_line_with_route_user_status_and_duration(
    as_alice, alice, game, behind_a_proxy, json_lines, django_assert_num_queries
):
    with django_assert_num_queries(2):  # as tests/games/test_views_queries.py counts it
        response = as_alice.get(f"/games/{game.pk}/", HTTP_X_REQUEST_ID="page-1")
    assert response.status_code == 200
    (line,) = access_lines(json_lines())
    assert TIME.fullmatch(line.pop("time"))
    duration = line.pop("duration_ms")
    assert isinstance(duration, float)
    assert line == {
        "level": "INFO",
        "logger": "tictactoe_site.access",
        "message": f"GET game_detail 200 {duration:.1f} ms",
        "request_id": "page-1",
        "user_id": alice.pk,
        "route": "game_detail",
        "method": "GET",
        "status": 200,
    }


def test_an_unknown_address_has_no_route_and_an_anonymous_page_no_user(
    client, db, json_lines
):
    assert client.get("/no/such/page/").status_code == 404
    assert client.get("/accounts/login/").status_code == 200
    missing, login = access_lines(json_lines())
    assert (missing["route"], missing["status"]) == (None, 404)
    assert missing["user_id"] is None
    assert (login["route"], login["status"], login["user_id"]) == (
        "account_login",
        200,
        None,
    )


@pytest.mark.django_db(transaction=True)
def test_a_moves_own_lines_name_its_request_user_and_route(
    as_alice, as_bob, alice, bob, game, behind_a_proxy, json_lines
):
    """games.signals logs the move after its commit, inside the request; a
    refused move is its access line alone."""
    moved = as_alice.post(
        f"/games/{game.pk}/move/", {"row": 0, "col": 0}, HTTP_X_REQUEST_ID="move-1"
    )
    assert moved.status_code == 302
    refused = as_alice.post(
        f"/games/{game.pk}/move/", {"row": 1, "col": 1}, HTTP_X_REQUEST_ID="move-2"
    )
    assert refused.status_code == 403
    lines = [
        (line["logger"], line["request_id"], line["user_id"], line["route"])
        for line in json_lines()
    ]
    assert lines == [
        ("games.signals", "move-1", alice.pk, "play_move"),
        ("tictactoe_site.access", "move-1", alice.pk, "play_move"),
        ("tictactoe_site.access", "move-2", alice.pk, "play_move"),
    ]


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("post", "/games/{game}/move/", 403, "Forbidden: /games/{game}/move/"),
        ("get", "/no/such/page/", 404, "Not Found: /no/such/page/"),
        (
            "get",
            "/games/{game}/move/",
            405,
            "Method Not Allowed: /games/{game}/move/",
        ),
    ],
)
def test_djangos_line_of_a_refusal_carries_its_request_id(
    as_bob, game, method, path, status, message
):
    """django.request writes a refusal's line once every middleware is done,
    the request id's too."""
    with console_output("json") as output:
        # alice is to move: bob's move is refused.
        response = getattr(as_bob, method)(
            path.format(game=game.pk), {"row": 0, "col": 0}
        )
    assert response.status_code == status
    lines = [json.loads(line) for line in output().splitlines()]
    (line,) = [line for line in lines if line["logger"] == "django.request"]
    assert line["message"] == message.format(game=game.pk)
    assert FRESH.fullmatch(response["X-Request-ID"])
    assert line["request_id"] == response["X-Request-ID"]
    assert line["route"] == (None if status == 404 else "play_move")


# -- the lines that name people --------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_games_lines_name_its_players_by_id(alice, bob, json_lines):
    game = services.create_game(creator=alice, opponent=bob, side="x")
    services.play_move(game_id=game.pk, user=alice, row=0, col=0)
    messages = [
        line["message"] for line in json_lines() if line["logger"] == "games.signals"
    ]
    assert messages == [
        f"event=game_created game={game.pk} player_x={alice.pk} "
        f"player_o={bob.pk} status=in_progress",
        f"event=move_made game={game.pk} seq=1 player={alice.pk} mark=X row=0 col=0",
    ]


# -- the queued email --------------------------------------------------------------


def test_a_queued_email_carries_its_request_id_to_the_workers_lines(
    make_user, settings, behind_a_proxy, json_lines
):
    dora = make_user("dora")
    confirmed(dora, "dora@example.com")
    settings.MAILERS = REFUSING  # queue it; the relay then refuses every try
    response = ask_for_reset("dora@example.com")
    assert response.status_code == 302
    request_id = response["X-Request-ID"]
    assert FRESH.fullmatch(request_id)
    (queued,) = DBTaskResult.objects.filter(task_path=deliver.module_path)
    message = queued.args_kwargs["args"][0]
    assert message["request_id"] == request_id
    assert mail.outbox == []

    # The worker, outside any request, at the last try.
    assert deliver.call(message, ATTEMPTS) == "given up"
    (line,) = [
        line for line in json_lines() if line["logger"] == "tictactoe_site.jobs.mail"
    ]
    assert line["level"] == "ERROR"
    assert line["request_id"] == request_id
    assert line["message"] == (
        f"Email '[tictactoe] Password Reset Email' to user={dora.pk} not sent "
        "after 6 attempts: SMTPServerDisconnected: Connection unexpectedly closed"
    )


def test_an_email_queued_before_request_ids_is_still_sent(db, settings, json_lines):
    from .test_mail_queue import QUEUED, queued_message

    settings.MAILERS = QUEUED
    assert deliver.call(queued_message(), 1) == "sent"
    assert [message.subject for message in mail.outbox] == ["S"]


# -- served: every line of the server's output -------------------------------------


def user_ids(backend) -> dict[str, int]:
    script = (
        "import json; from django.contrib.auth import get_user_model; "
        "print(json.dumps(dict(get_user_model().objects.values_list('username', "
        "'pk'))))"
    )
    return json.loads(hosts.manage(backend, "shell", "-c", script).splitlines()[-1])


def request(port: int, path: str, session: str, request_id: str):
    connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=hosts.BOUND)
    connection_.request(
        "GET",
        path,
        headers={"Cookie": f"sessionid={session}", "X-Request-ID": request_id},
    )
    return connection_, connection_.getresponse()


@contextlib.contextmanager
def json_logging_server(backend, log_path: Path):
    """One app host behind a trusted proxy, writing JSON lines to `log_path`;
    its port."""
    with (
        log_path.open("w") as log,
        hosts.serving(
            backend,
            1,
            log=log,
            DJANGO_LOG_FORMAT="json",
            DJANGO_TRUSTED_PROXY_COUNT="1",
        ) as (ports, _),
    ):
        (port,) = ports
        yield port


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.processes
def test_the_served_app_writes_only_json_lines(backend, tmp_path):
    log_path = tmp_path / "server.log"
    with json_logging_server(backend, log_path) as port:
        sessions, game_versions = hosts.games(backend, 1)
        (game_id,) = game_versions
        users = user_ids(backend)
        page, answer = request(port, f"/games/{game_id}/", sessions["alice"], "page-1")
        assert (answer.status, answer.getheader("X-Request-ID")) == (200, "page-1")
        answer.read()
        page.close()
        stream, answer = request(
            port, f"/games/{game_id}/events/", sessions["bob"], "stream-1"
        )
        assert (answer.status, answer.getheader("X-Request-ID")) == (200, "stream-1")
        answer.readline()  # the stream is open: "retry: ..."
        stream.close()
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines()]  # every one is JSON
    assert {"uvicorn.error", "tictactoe_site.jobs.heartbeat"} <= {
        line["logger"] for line in lines
    }, text
    by_id = {line["request_id"]: line for line in access_lines(lines)}
    page_line, stream_line = by_id["page-1"], by_id["stream-1"]
    assert (
        page_line["route"],
        page_line["status"],
        page_line["user_id"],
        page_line["method"],
    ) == ("game_detail", 200, users["alice"], "GET")
    assert (stream_line["route"], stream_line["status"], stream_line["user_id"]) == (
        "game_events",
        200,
        users["bob"],
    )
    assert all(set(line) >= LINE_FIELDS for line in lines)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.processes
def test_behind_the_documented_nginx_the_proxys_id_names_the_request(backend, tmp_path):
    """docs/deploying.md's nginx block sets X-Request-ID to nginx's own $request_id: a
    client's header is replaced, and the app's log line names nginx's id."""
    if not Path(fleet.NGINX).exists():
        fleet.unavailable("needs nginx: sudo apt-get install nginx-light")
    log_path = tmp_path / "server.log"
    with json_logging_server(backend, log_path) as port:
        nginx = fleet.Nginx(tmp_path / "nginx", [f"127.0.0.1:{port}"] * 3)
        nginx.start()
        try:
            direct = login_page_id(port, "chosen-by-client")
            proxied = login_page_id(nginx.port, "chosen-by-client")
        finally:
            nginx.stop()
    assert direct == "chosen-by-client"  # the app takes a trusted proxy's header
    assert FRESH.fullmatch(proxied)  # nginx put its own in its place
    lines = access_lines([json.loads(line) for line in log_path.open()])
    assert [(line["request_id"], line["route"]) for line in lines] == [
        ("chosen-by-client", "account_login"),
        (proxied, "account_login"),
    ]


def login_page_id(port: int, request_id: str) -> str:
    """The X-Request-ID of the login page's answer on `port`."""
    connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=hosts.BOUND)
    try:
        connection_.request(
            "GET",
            "/accounts/login/",
            headers={"Host": "127.0.0.1", "X-Request-ID": request_id},
        )
        answer = connection_.getresponse()
        assert answer.status == 200
        return answer.getheader("X-Request-ID")
    finally:
        connection_.close()
