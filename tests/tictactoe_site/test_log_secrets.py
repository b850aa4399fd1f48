"""No invitation's secret in any log line (tictactoe_site.ops.logs.NoSecrets, on
every handler): the refusals an open invitation answers, every record of every
logger at its lowest level through the configured console handler, in both
formats; and uvicorn's access log of a served app, which writes paths."""

import http.client
import json
import re

import pytest
from django.test import Client

from games import services

from ..support import hosts
from .test_logs import console_output

# A line of settings.LOGGING's text format: time (two words), level, logger.
TEXT_LINE = re.compile(r"\S+ \S+ (?P<level>\S+) (?P<logger>\S+) (?P<message>.*)")


def lines_of(text: str, log_format: str) -> list[dict]:
    if log_format == "json":
        return [json.loads(line) for line in text.splitlines()]
    return [
        match.groupdict()
        for line in text.splitlines()
        if (match := TEXT_LINE.fullmatch(line))
    ]


def path_of(invitation) -> str:
    return f"/invitations/{invitation.game_id}/{invitation.secret}/"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_refusal_of_an_open_invitation_logs_its_secret(
    log_format, settings, alice, bob, carol, as_bob
):
    settings.GAMES_GUEST_CREATE_LIMIT = 1
    settings.GAMES_MAX_OPEN_PER_USER = 6
    blocked, named, used, limited, spent, forged = (
        services.create_invitation(creator=alice) for _ in range(6)
    )
    services.block_player(blocker=alice, blocked=bob)
    services.join_invitation(game_id=used.game_id, secret=used.secret, user=carol)
    # A visitor each, from networks of their own: one guest each.
    prober, latecomer, spender, forger = (
        Client(REMOTE_ADDR=f"10.{number}.0.1") for number in range(1, 5)
    )
    forger.handler.enforce_csrf_checks = True
    with console_output(log_format) as output:
        statuses = [
            as_bob.get(path_of(blocked)).status_code,
            as_bob.post(path_of(blocked) + "join/").status_code,
            prober.post(path_of(named) + "guest/", {"name": "alice"}).status_code,
            latecomer.get(path_of(used)).status_code,
            latecomer.post(path_of(used) + "guest/", {"name": "late"}).status_code,
            spender.post(path_of(spent) + "guest/", {"name": "first"}).status_code,
            Client(REMOTE_ADDR="10.3.0.1")  # the spender's network, again
            .post(path_of(limited) + "guest/", {"name": "next"})
            .status_code,
            forger.post(path_of(forged) + "guest/", {"name": "forged"}).status_code,
        ]
    assert statuses == [403, 403, 400, 410, 410, 302, 429, 403]
    text = output()
    for invitation in (blocked, named, used, limited, spent, forged):
        assert invitation.secret not in text
    refusals = [
        (line["logger"], line["message"])
        for line in lines_of(text, log_format)
        if line["logger"].startswith(("django.request", "django.security"))
    ]
    assert refusals == [
        ("django.request", f"Forbidden: /invitations/{blocked.game_id}/…/"),
        ("django.request", f"Forbidden: /invitations/{blocked.game_id}/…/join/"),
        ("django.request", f"Bad Request: /invitations/{named.game_id}/…/guest/"),
        ("django.request", f"Gone: /invitations/{used.game_id}/…/"),
        ("django.request", f"Gone: /invitations/{used.game_id}/…/guest/"),
        (
            "django.request",
            f"Too Many Requests: /invitations/{limited.game_id}/…/guest/",
        ),
        (
            "django.security.csrf",
            f"Forbidden (CSRF cookie not set.): /invitations/{forged.game_id}/…/guest/",
        ),
    ]


INVITATION = """
import json
from django.contrib.auth import get_user_model
from games import services

invitation = services.create_invitation(
    creator=get_user_model().objects.create_user("inviter")
)
print(json.dumps([invitation.game_id, invitation.secret]))
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.processes
def test_uvicorns_access_log_writes_no_secret(backend, tmp_path, log_format):
    output = hosts.manage(backend, "shell", "-c", INVITATION)
    game_id, secret = json.loads(output.splitlines()[-1])
    path = f"/invitations/{game_id}/{secret}/"
    log_path = tmp_path / "server.log"
    with (
        log_path.open("w") as log,
        hosts.serving(
            backend, 1, log=log, DJANGO_LOG_FORMAT=log_format, WEB_ACCESS_LOG="1"
        ) as (ports, _),
    ):
        (port,) = ports
        assert status_of(port, path) == 200
        assert status_of(port, f"/accounts/login/?next={path}") == 200
    text = log_path.read_text()
    assert secret not in text
    if log_format == "json":
        text = "\n".join(json.loads(line)["message"] for line in text.splitlines())
    # Both paths were written, without the secret.
    assert f'"GET /invitations/{game_id}/…/ HTTP/1.1" 200' in text
    assert f'"GET /accounts/login/?next=/invitations/{game_id}/…/ HTTP/1.1"' in text


def status_of(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=hosts.BOUND)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()
