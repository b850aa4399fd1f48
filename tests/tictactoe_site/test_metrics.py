"""tictactoe_site.ops.metrics: /metrics answers the operator only (loopback without a
proxy, or the bearer token) and 404s like an unknown address for anyone else;
what happens on the site moves the counts; the real server adds up every
process's counts, the task worker's mail included.

In-process, a process counts in its own memory: each test reads the values
before and after, through the endpoint itself.
"""

import hmac
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from games import services
from tictactoe_site.jobs.mail import ATTEMPTS, deliver
from tictactoe_site.lib.env import ConfigurationError
from tictactoe_site.ops import metrics, metrics_dir, metrics_endpoint

from ..support.asgi import Stream, in_thread, move, run, sessionid
from ..support.bodies import comparable
from ..support.served import serving
from ..support.smtp_sink import SmtpSink
from .test_mail_queue import QUEUED, REFUSING, queued_message

MIDDLEWARE = "tictactoe_site.ops.middleware.operations"
OUTSIDER = "203.0.113.7"  # a documentation address: not this machine
TOKEN = "scrape-token-for-tests-0123456789"
ROOT = Path(__file__).resolve().parents[2]
BOUND = 60.0  # seconds a served test waits for a count, never slept


def values(text: str) -> dict[tuple, float]:
    """{(sample name, (label, value) pairs sorted): value} of a scrape."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def read(client, name: str, **labels) -> float:
    """One value from /metrics as the operator reads it (0 when absent)."""
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    return values(response.content.decode()).get(
        (name, tuple(sorted(labels.items()))), 0.0
    )


# Who may read it -----------------------------------------------------------------


def page(response) -> tuple[int, bytes]:
    return response.status_code, comparable(
        response.content, response.request["PATH_INFO"]
    )


def not_found_page(client, **extra):
    return page(client.get("/no-such-page/", **extra))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extra",
    [
        {"REMOTE_ADDR": OUTSIDER},
        # A proxy on this machine relays everybody from a loopback address.
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": OUTSIDER},
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_REAL_IP": OUTSIDER},
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_FORWARDED": f"for={OUTSIDER}"},
        {"REMOTE_ADDR": OUTSIDER, "HTTP_AUTHORIZATION": f"Bearer {TOKEN}x"},
        {"REMOTE_ADDR": OUTSIDER, "HTTP_AUTHORIZATION": f"Basic {TOKEN}"},
        {"REMOTE_ADDR": OUTSIDER, "HTTP_AUTHORIZATION": "Bearer "},
    ],
    ids=[
        "outsider",
        "forwarded-for",
        "real-ip",
        "forwarded",
        "wrong-token",
        "not-bearer",
        "empty-token",
    ],
)
def test_anyone_but_the_operator_gets_the_404_of_an_unknown_address(
    client, settings, extra
):
    settings.METRICS_TOKEN = TOKEN
    response = client.get("/metrics", **extra)
    assert page(response) == not_found_page(client, **extra)
    assert response.status_code == 404
    assert b"tictactoe_requests_total" not in response.content


@pytest.mark.django_db
def test_the_operator_reads_with_get_only(client):
    response = client.post("/metrics", REMOTE_ADDR="127.0.0.1")
    unknown = client.post("/no-such-page/", REMOTE_ADDR="127.0.0.1")
    assert page(response) == page(unknown)
    assert response.status_code == 404


@pytest.mark.django_db
def test_without_a_token_configured_a_bearer_header_opens_nothing(client, settings):
    settings.METRICS_TOKEN = ""
    response = client.get(
        "/metrics", REMOTE_ADDR=OUTSIDER, HTTP_AUTHORIZATION="Bearer "
    )
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extra",
    [
        {"REMOTE_ADDR": "127.0.0.1"},
        {"REMOTE_ADDR": "::1"},
        {"REMOTE_ADDR": "::ffff:127.0.0.1"},
        {"REMOTE_ADDR": OUTSIDER, "HTTP_AUTHORIZATION": f"Bearer {TOKEN}"},
        {"REMOTE_ADDR": OUTSIDER, "HTTP_AUTHORIZATION": f"bearer {TOKEN}"},
        # The token opens it through a proxy too.
        {
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_X_FORWARDED_FOR": OUTSIDER,
            "HTTP_AUTHORIZATION": f"Bearer {TOKEN}",
        },
    ],
    ids=["ipv4", "ipv6", "mapped", "token", "token-any-case", "token-via-proxy"],
)
def test_the_operator_reads_the_metrics(client, settings, extra):
    settings.METRICS_TOKEN = TOKEN
    # Prometheus scrapes a host by its address, which ALLOWED_HOSTS need not name.
    response = client.get("/metrics", HTTP_HOST="10.0.0.11:8000", **extra)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "no-store" in response["Cache-Control"]
    assert "# TYPE tictactoe_requests_total counter" in response.content.decode()


@pytest.mark.django_db
def test_the_token_is_compared_in_constant_time(client, settings, monkeypatch):
    """What is sent and the token go to hmac.compare_digest, whose time does not
    tell how much of a guess was right."""
    settings.METRICS_TOKEN = TOKEN
    compared = []
    constant_time = hmac.compare_digest

    def spy(given, token):
        compared.append((given, token))
        return constant_time(given, token)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    for sent, status in [(TOKEN, 200), (f"{TOKEN}x", 404)]:
        response = client.get(
            "/metrics", REMOTE_ADDR=OUTSIDER, HTTP_AUTHORIZATION=f"Bearer {sent}"
        )
        assert response.status_code == status
    assert compared == [
        (TOKEN.encode(), TOKEN.encode()),
        (f"{TOKEN}x".encode(), TOKEN.encode()),
    ]


@pytest.mark.django_db
def test_with_metrics_off_there_is_no_endpoint(client, settings):
    settings.METRICS_ENABLED = False
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert page(response) == not_found_page(client)


@pytest.mark.processes
def test_the_metrics_are_on_by_default_and_off_with_the_switch():
    def middleware(**env) -> list[str]:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from django.conf import settings; "
                "print(settings.MIDDLEWARE[0], settings.METRICS_ENABLED)",
            ],
            env={"DJANGO_SETTINGS_MODULE": "tests.settings", **env},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.split()

    assert middleware() == [MIDDLEWARE, "True"]
    assert middleware(METRICS_ENABLED="0") == [MIDDLEWARE, "False"]


# What it counts -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_page_is_counted_by_route_name_and_status_and_timed(client, game, alice):
    player = client
    player.force_login(alice)
    path = reverse("game_detail", args=[game.pk])
    before = read(client, "tictactoe_requests_total", route="game_detail", status="200")
    timed = read(
        client, "tictactoe_request_duration_seconds_count", route="game_detail"
    )
    missing = read(client, "tictactoe_requests_total", route="unmatched", status="404")
    assert player.get(path).status_code == 200
    assert player.get(path).status_code == 200
    assert player.get("/games/0/nothing-here/").status_code == 404
    assert read(
        client, "tictactoe_requests_total", route="game_detail", status="200"
    ) == (before + 2)
    assert read(
        client, "tictactoe_request_duration_seconds_count", route="game_detail"
    ) == (timed + 2)
    assert read(
        client, "tictactoe_requests_total", route="unmatched", status="404"
    ) == (missing + 1)


@pytest.mark.django_db
def test_a_move_is_counted(client_for, game, alice, django_capture_on_commit_callbacks):
    player = client_for(alice)
    before = read(player, "tictactoe_moves_total")
    posts = read(player, "tictactoe_requests_total", route="play_move", status="302")
    with django_capture_on_commit_callbacks(execute=True):  # signals: after commit
        response = player.post(
            reverse("play_move", args=[game.pk]), {"row": 1, "col": 1}
        )
    assert response.status_code == 302
    assert read(player, "tictactoe_moves_total") == before + 1
    assert read(
        player, "tictactoe_requests_total", route="play_move", status="302"
    ) == (posts + 1)
    # A refused move is no move.
    refused = player.post(reverse("play_move", args=[game.pk]), {"row": 1, "col": 1})
    assert refused.status_code == 403  # bob's turn
    assert read(player, "tictactoe_moves_total") == before + 1


@pytest.mark.django_db
def test_a_429_is_counted_as_a_refusal_by_route(client_for, alice, settings):
    settings.GAMES_MAX_OPEN_PER_USER = 1
    player = client_for(alice)
    before = read(player, "tictactoe_rate_limited_total", route="new_game")
    assert player.post(reverse("new_game"), {"opponent": ""}).status_code == 302
    assert read(player, "tictactoe_rate_limited_total", route="new_game") == before
    refused = player.post(reverse("new_game"), {"opponent": ""})
    assert refused.status_code == 429
    assert read(player, "tictactoe_rate_limited_total", route="new_game") == (
        before + 1
    )


@pytest.mark.django_db
def test_a_paused_login_is_counted_as_a_refusal(client, alice, settings):
    before = read(client, "tictactoe_rate_limited_total", route="account_login")
    statuses = [
        client.post(
            reverse("account_login"), {"login": "alice", "password": "wrong"}
        ).status_code
        for _ in range(settings.LOGIN_FAILURE_LIMIT + 2)
    ]
    assert statuses == [400] * settings.LOGIN_FAILURE_LIMIT + [429, 429]
    assert read(client, "tictactoe_rate_limited_total", route="account_login") == (
        before + 2
    )


def outcome(client, name: str) -> float:
    return read(client, "tictactoe_mails_total", outcome=name)


@pytest.mark.django_db(transaction=True)
def test_mails_are_counted_sent_retried_and_given_up(client, settings, run_tasks):
    before = {name: outcome(client, name) for name in ("sent", "retried", "given_up")}
    settings.MAILERS = QUEUED
    deliver.enqueue(queued_message())
    run_tasks()
    settings.MAILERS = REFUSING
    deliver.enqueue(queued_message())  # fails: tried again in 30 s
    deliver.enqueue(queued_message(), ATTEMPTS)  # the last try fails: given up
    run_tasks()
    after = {name: outcome(client, name) for name in before}
    assert {name: after[name] - before[name] for name in after} == {
        "sent": 1,
        "retried": 1,
        "given_up": 1,
    }


@pytest.mark.django_db
def test_the_task_queue_depth_and_the_age_of_its_oldest_task(client):
    from django_tasks_db.models import DBTaskResult

    assert read(client, "tictactoe_task_queue_depth") == 0
    assert read(client, "tictactoe_task_queue_oldest_age_seconds") == 0
    deliver.enqueue(queued_message())
    deliver.enqueue(queued_message())
    # Waiting for a retry: not due yet, so not behind.
    deliver.using(run_after=timezone.now() + timedelta(minutes=5)).enqueue(
        queued_message()
    )
    ten_minutes_ago = timezone.now() - timedelta(minutes=10)
    DBTaskResult.objects.filter(
        pk=DBTaskResult.objects.filter(run_after__year=9999).values("pk")[:1]
    ).update(enqueued_at=ten_minutes_ago)
    assert read(client, "tictactoe_task_queue_depth") == 2
    age = read(client, "tictactoe_task_queue_oldest_age_seconds")
    assert 600 <= age < 660


@pytest.mark.django_db
def test_a_retry_counts_from_when_it_became_due(client):
    deliver.using(run_after=timezone.now() - timedelta(seconds=90)).enqueue(
        queued_message()
    )
    assert read(client, "tictactoe_task_queue_depth") == 1
    assert 90 <= read(client, "tictactoe_task_queue_oldest_age_seconds") < 150


@pytest.mark.usefixtures("fresh_hub")
@pytest.mark.django_db(transaction=True)
def test_open_streams_and_the_events_they_send(game, alice, carol, client_for):
    watcher = client_for(carol)
    cookie = sessionid(watcher)

    def streams(kind):
        return read(watcher, "tictactoe_streams_open", kind=kind)

    def events(kind):
        return read(watcher, "tictactoe_live_events_sent_total", kind=kind)

    def answered(status):
        return read(watcher, "tictactoe_stream_answers_total", status=status)

    before = {"game": streams("game"), "lobby": streams("lobby")}
    sent = events("game")
    opened, refused = answered("200"), answered("403")

    async def scenario():
        game_stream = Stream(
            f"/games/{game.pk}/events/?v={game.version}", cookie=cookie
        )
        lobby_stream = Stream("/lobby/events/", cookie=cookie)
        await game_stream.response()
        await lobby_stream.response()
        during = {
            "game": await in_thread(streams, "game"),
            "lobby": await in_thread(streams, "lobby"),
        }
        await in_thread(move, game, alice, 1, 1)
        await game_stream.event()
        await game_stream.close()
        await lobby_stream.close()
        # A started game is public by its link; the lobby's stream is a player's.
        anonymous = await Stream("/lobby/events/").response()
        assert anonymous[0] == 403
        return during

    during = run(scenario())
    assert during == {"game": before["game"] + 1, "lobby": before["lobby"] + 1}
    assert {"game": streams("game"), "lobby": streams("lobby")} == before
    assert events("game") == sent + 1
    assert (answered("200"), answered("403")) == (opened + 2, refused + 1)


@pytest.mark.usefixtures("fresh_hub")
@pytest.mark.django_db(transaction=True)
def test_a_stream_past_the_limit_is_counted_as_a_refusal(
    game, bob, client_for, settings
):
    settings.WEB_MAX_STREAMS_PER_USER = 1
    viewer = client_for(bob)
    cookie = sessionid(viewer)
    before = read(viewer, "tictactoe_rate_limited_total", route="lobby_events")

    async def scenario():
        first = Stream("/lobby/events/", cookie=cookie)
        await first.response()
        status, _, _ = await Stream("/lobby/events/", cookie=cookie).response()
        await first.close()
        return status

    assert run(scenario()) == 429
    assert read(viewer, "tictactoe_rate_limited_total", route="lobby_events") == (
        before + 1
    )


@pytest.mark.postgresql_only
@pytest.mark.django_db
def test_the_database_pool_is_sampled(client, game):
    from django.db import connection

    services.play_move(game_id=game.pk, user=game.player_x, row=0, col=0)
    metrics.sample_pool()
    in_use = read(client, "tictactoe_db_pool_connections", state="in_use")
    idle = read(client, "tictactoe_db_pool_connections", state="idle")
    # This test's own connection is out of the pool, in use.
    assert in_use >= 1
    assert in_use + idle == connection.pool.get_stats()["pool_size"]
    assert read(client, "tictactoe_db_pool_max_connections") == (
        connection.pool.max_size
    )
    assert read(client, "tictactoe_db_pool_waiting") == 0


# The directory the processes share ----------------------------------------------


@pytest.mark.processes
def test_the_server_start_removes_the_files_of_processes_gone(tmp_path, monkeypatch):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead, alive = int(gone.stdout), os.getpid()
    names = [
        f"counter_{dead}.db",
        f"gauge_livesum_{dead}.db",
        f"histogram_{dead}.db",
        f"counter_{alive}.db",
        f"gauge_livesum_{alive}.db",
        "notes.txt",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv(metrics_dir.VARIABLE, str(tmp_path))
    metrics_dir.share(server_start=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [f"counter_{alive}.db", f"gauge_livesum_{alive}.db", "notes.txt"]
    )


@pytest.mark.django_db  # the scrape reads the task queue
@pytest.mark.processes
def test_a_process_gone_without_a_word_leaves_its_counts_but_not_its_gauges(
    tmp_path, monkeypatch
):
    """As after a kill -9: its streams are no longer open; its moves were made."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(gone.stdout)
    streams = mmap_key(
        "tictactoe_streams_open", "tictactoe_streams_open", ["kind"], ["game"], "h"
    )
    moves = mmap_key("tictactoe_moves", "tictactoe_moves_total", [], [], "h")
    for name, key, value in [
        (f"gauge_livesum_{dead}.db", streams, 7),
        (f"counter_{dead}.db", moves, 3),
    ]:
        written = MmapedDict(str(tmp_path / name))
        written.write_value(key, value, 0.0)
        written.close()
    monkeypatch.setenv(metrics_dir.VARIABLE, str(tmp_path))
    found = values(metrics_endpoint.scrape().content.decode())
    assert found[("tictactoe_moves_total", ())] == 3
    assert ("tictactoe_streams_open", (("kind", "game"),)) not in found
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"counter_{dead}.db"]


def test_a_directory_that_cannot_be_made_stops_the_start_with_one_line(
    tmp_path, monkeypatch
):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(metrics_dir.VARIABLE, str(tmp_path / "file" / "metrics"))
    with pytest.raises(ConfigurationError, match=r"^The metrics directory .*/file/"):
        metrics_dir.share(server_start=True)


# The real server ----------------------------------------------------------------


def scrape(port: int, headers=()) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers=dict(headers)
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(port: int, key: tuple, expected: float) -> dict:
    """The scrape once `key` has reached `expected` (or at the deadline)."""
    deadline = time.monotonic() + BOUND
    while True:
        found = values(scrape(port)[1])
        if found.get(key) == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)  # polling the scrape for the worker's count, bounded


PAGES = 24


@pytest.mark.processes
def test_the_server_adds_up_every_process_and_the_worker(tmp_path):
    with (
        SmtpSink() as relay,
        serving(
            tmp_path,
            "metrics",
            workers=2,
            DJANGO_EMAIL_HOST="127.0.0.1",
            DJANGO_EMAIL_PORT=str(relay.port),
            METRICS_TOKEN=TOKEN,
            TASK_POLL_SECONDS="0.1",
        ) as app,
    ):
        # Each on a connection of its own: both server processes take some.
        statuses = [app.browser().get("/accounts/login/").status for _ in range(PAGES)]
        assert statuses == [200] * PAGES
        queued = app.manage(
            "shell",
            "-c",
            "from tictactoe_site.jobs.mail import deliver; "
            "from tests.tictactoe_site.test_mail_queue import queued_message; "
            "deliver.enqueue(queued_message(subject='counted'))",
        )
        assert queued.returncode == 0, queued.stderr
        sent = ("tictactoe_mails_total", (("outcome", "sent"),))
        found = wait_for(app.port, sent, 1)
        assert relay.subjects() == ["counted"]
        assert found[sent] == 1
        pages = (
            "tictactoe_requests_total",
            (("route", "account_login"), ("status", "200")),
        )
        assert found[pages] == PAGES
        # Every process of the host writes its own files: the server processes
        # and the task worker.
        directory = tmp_path / f"cache-{app.port}" / "metrics"
        pids = {pid for _, pid in metrics_dir.process_files(directory)}
        assert set(app.worker_pids()) < pids
        assert len(app.worker_pids()) == 2
        # Through the proxy (X-Forwarded-For): what an unknown address gets,
        # unless the token comes along.
        proxied = app.browser()
        proxied.forwarded_for = OUTSIDER
        unknown = proxied.get("/no-such-page/")
        refused = proxied.get("/metrics")
        assert (refused.status, comparable(refused.body, "/metrics")) == (
            unknown.status,
            comparable(unknown.body, "/no-such-page/"),
        )
        assert refused.status == 404
        headers = {
            "X-Forwarded-For": OUTSIDER,
            "X-Forwarded-Proto": "https",
            "Authorization": f"Bearer {TOKEN}",
        }
        status, text = scrape(app.port, headers)
        assert status == 200
        assert values(text)[sent] == 1
