"""tictactoe_site.server.bridge: Django's WSGI application behind the ASGI server."""

import asyncio
import json
import os
import sys
import threading

import pytest
from django.core.cache import caches
from django.core.wsgi import get_wsgi_application
from django.urls import reverse

from tictactoe_site.lib.deferred import DEFER
from tictactoe_site.server import cpus
from tictactoe_site.server.bridge import REQUEST_TOO_LARGE, WsgiBridge, build_environ


def scope(path="/games/1/", **extra) -> dict:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 8000),
        "client": ("10.0.0.7", 50123),
    } | extra


class Recorder:
    """A WSGI app that answers the environ it was given, as JSON."""

    def __init__(self):
        self.calls = []

    def __call__(self, environ, start_response):
        self.calls.append(environ)
        shown = {
            key: value
            for key, value in environ.items()
            if isinstance(value, str | int) and not key.startswith("wsgi.")
        }
        shown["body"] = environ["wsgi.input"].read().decode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(shown).encode()]


def call(bridge, scope, messages) -> list[dict]:
    """Run one request through `bridge`; `messages` are what the client sends."""
    incoming = list(messages)
    sent = []

    async def receive():
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # a client that sends nothing more

    async def send(message):
        sent.append(message)

    async def run():
        await asyncio.wait_for(bridge(scope, receive, send), timeout=10)

    asyncio.run(run())
    return sent


def body(data=b"", more=False) -> dict:
    return {"type": "http.request", "body": data, "more_body": more}


def answer(sent) -> tuple[int, dict]:
    start, content = sent
    return start["status"], json.loads(content["body"])


def test_environ_translation():
    app = Recorder()
    request = scope(
        method="POST",
        query_string=b"ply=3&x=%C3%A9",
        headers=[
            (b"host", b"example.org"),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", b"7"),
            (b"x-forwarded-for", b"192.0.2.1"),
        ],
    )
    status, environ = answer(
        call(WsgiBridge(app, threads=2), request, [body(b"row=1&c")])
    )
    assert status == 200
    assert environ == {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": "/games/1/",
        "QUERY_STRING": "ply=3&x=%C3%A9",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "10.0.0.7",
        "REMOTE_PORT": "50123",
        "HTTP_HOST": "example.org",
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "CONTENT_LENGTH": "7",
        "HTTP_X_FORWARDED_FOR": "192.0.2.1",
        "body": "row=1&c",
    }


def test_repeated_headers_are_joined_and_underscored_ones_dropped():
    app = Recorder()
    request = scope(
        headers=[
            (b"accept", b"text/html"),
            (b"accept", b"application/json"),
            (b"cookie", b"a=1"),
            (b"cookie", b"b=2"),
            (b"x-forwarded-proto", b"http"),
            # would also become HTTP_X_FORWARDED_PROTO: a spoofing attempt
            (b"x_forwarded_proto", b"https"),
        ]
    )
    _, environ = answer(call(WsgiBridge(app, threads=2), request, [body()]))
    assert environ["HTTP_ACCEPT"] == "text/html,application/json"
    assert environ["HTTP_COOKIE"] == "a=1; b=2"
    assert environ["HTTP_X_FORWARDED_PROTO"] == "http"


def test_root_path_becomes_script_name():
    environ = build_environ(scope(path="/play/games/1/", root_path="/play"), b"")
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"]) == ("/play", "/games/1/")


def test_non_ascii_path_is_passed_as_latin_1_as_pep_3333_says():
    environ = build_environ(scope(path="/players/zoë/"), b"")
    assert environ["PATH_INFO"].encode("latin-1").decode() == "/players/zoë/"


def test_a_body_in_several_parts_arrives_whole():
    app = Recorder()
    parts = [body(b"row=", more=True), body(b"1&col=", more=True), body(b"2")]
    _, environ = answer(call(WsgiBridge(app, threads=2), scope(), parts))
    assert environ["body"] == "row=1&col=2"


def test_a_body_over_the_limit_is_refused_with_413_before_the_app(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000
    app = Recorder()
    chunk = b"x" * 40_000
    sent = call(
        WsgiBridge(app, threads=2), scope(method="POST"), [body(chunk, more=True)] * 3
    )
    assert sent[0]["status"] == 413
    assert sent[1]["body"] == REQUEST_TOO_LARGE
    assert app.calls == []


def test_a_client_that_disconnects_mid_upload_reaches_no_view():
    app = Recorder()
    messages = [body(b"row=1&co", more=True), {"type": "http.disconnect"}]
    sent = call(WsgiBridge(app, threads=2), scope(method="POST"), messages)
    assert sent == []
    assert app.calls == []


def test_the_url_scheme_comes_from_the_scope():
    app = Recorder()
    call(WsgiBridge(app, threads=2), scope(scheme="https"), [body()])
    call(WsgiBridge(app, threads=2), scope(), [body()])
    assert [environ["wsgi.url_scheme"] for environ in app.calls] == ["https", "http"]


def test_a_bridge_needs_a_page_thread():
    with pytest.raises(ValueError, match="A page needs at least one thread, not 0."):
        WsgiBridge(Recorder(), threads=0)
    with pytest.raises(
        ValueError, match="An account page needs at least one thread, not 0."
    ):
        WsgiBridge(Recorder(), threads=1, account_threads=0)


def pool_of_this_thread() -> str:
    """ "wsgi" for a ThreadPoolExecutor thread named "wsgi_0", else the name."""
    return threading.current_thread().name.rsplit("_", 1)[0]


def where_it_ran(environ, start_response):
    """A WSGI app that answers the name and CPU priority of its thread."""
    thread = pool_of_this_thread()
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"thread": thread, "nice": nice}).encode()]


@pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread")
def test_account_pages_run_in_their_own_threads_at_a_lower_priority():
    bridge = WsgiBridge(
        where_it_ran, threads=2, account_threads=1, account_paths=("/accounts/",)
    )
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    ran = {
        path: answer(call(bridge, scope(path=path), [body()]))[1]
        for path in ("/accounts/login/", "/games/1/", "/accountsx/")
    }
    assert ran == {
        "/accounts/login/": {"thread": "wsgi-account", "nice": base + 10},
        "/games/1/": {"thread": "wsgi", "nice": base},
        "/accountsx/": {"thread": "wsgi", "nice": base},
    }


def cpus_it_ran_on(environ, start_response):
    """A WSGI app that answers the CPUs its thread may run on."""
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(sorted(os.sched_getaffinity(0))).encode()]


@pytest.mark.skipif(sys.platform != "linux", reason="CPU affinity per thread")
def test_in_a_pinned_process_page_threads_keep_its_cpu_and_account_threads_get_all(
    tmp_path,
):
    """tictactoe_site.server.cpus: password hashing runs without the interpreter lock,
    so the account threads may use every CPU."""
    allowed = sorted(os.sched_getaffinity(0))
    result = {}

    def a_pinned_server_process():
        cpu = cpus.pin_to_own_cpu(tmp_path / "cpus.lock")
        bridge = WsgiBridge(
            cpus_it_ran_on, threads=1, account_threads=1, account_paths=("/accounts/",)
        )
        result["cpu"] = cpu
        for path in ("/accounts/login/", "/games/1/"):
            result[path] = answer(call(bridge, scope(path=path), [body()]))[1]
        cpus.unpin_thread()

    thread = threading.Thread(target=a_pinned_server_process)  # the test's stays
    thread.start()
    thread.join(timeout=30)
    assert result == {
        "cpu": allowed[0],
        "/accounts/login/": allowed,
        "/games/1/": [allowed[0]],
    }


def test_busy_account_threads_hold_up_no_other_page():
    """Every account thread is taken (logins hashing passwords): a game page is
    still answered, and the account page waiting for a thread then is too."""
    release, login_started = threading.Event(), threading.Event()
    started = []

    def app(environ, start_response):
        if environ["PATH_INFO"].startswith("/accounts/"):
            started.append(environ["PATH_INFO"])
            login_started.set()
            release.wait(timeout=10)
        start_response("204 No Content", [])
        return []

    bridge = WsgiBridge(
        app, threads=1, account_threads=1, account_paths=("/accounts/",)
    )

    async def request(path: str) -> int:
        sent = []

        async def receive():
            return body()

        async def send(message):
            sent.append(message)

        await bridge(scope(path=path), receive, send)
        return sent[0]["status"]

    async def run():
        logins = [
            asyncio.create_task(request(f"/accounts/login/{n}")) for n in range(2)
        ]
        assert await asyncio.to_thread(login_started.wait, 5)
        page = await asyncio.wait_for(request("/games/1/"), timeout=5)
        running = len(started)
        release.set()
        return page, running, await asyncio.gather(*logins)

    page, running, logins = asyncio.run(run())
    assert (page, running) == (204, 1)  # the second login waited for the thread
    assert logins == [204, 204]


# Outside a test transaction: Django's handler closes the connection at the
# start of each request, as in production.
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker_beating")
def test_django_pages_use_the_database_from_a_page_thread():
    """Django refuses database calls where an event loop is running: pages run
    in a thread that has none."""
    bridge = WsgiBridge(get_wsgi_application(), threads=2)
    start, content = call(bridge, scope(path="/healthz"), [body()])
    assert (start["status"], content["body"]) == (200, b"ok\n")


def test_a_slow_page_does_not_hold_up_the_loop():
    """The page below can only finish once the loop has run something else
    meanwhile: a page run on the loop would never see it (and time out)."""
    loop_ran = threading.Event()
    seen = []

    def slow_page(environ, start_response):
        seen.append(loop_ran.wait(timeout=5))
        try:
            asyncio.get_running_loop()
            seen.append("loop")
        except RuntimeError:
            seen.append("no loop")
        start_response("204 No Content", [])
        return []

    bridge = WsgiBridge(slow_page, threads=2)

    async def run():
        sent = []

        async def receive():
            return body()

        async def send(message):
            sent.append(message)

        async def meanwhile():
            loop_ran.set()

        await asyncio.gather(bridge(scope(), receive, send), meanwhile())
        return sent[0]["status"]

    assert asyncio.run(run()) == 204
    assert seen == [True, "no loop"]


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("account_login", {}),
        ("account_signup", {}),
        ("account_reauthenticate", {}),
        ("account_email", {}),
        ("account_change_password", {}),
        ("account_set_password", {}),
        ("account_reset_password_from_key", {"uidb36": "1", "key": "set-password"}),
        ("account_close", {}),
        ("admin:login", {}),
    ],
)
def test_every_page_that_checks_a_password_runs_in_the_account_threads(name, kwargs):
    from tictactoe_site.server.asgi import ACCOUNT_PATHS

    assert reverse(name, kwargs=kwargs).startswith(ACCOUNT_PATHS)


def where_and_how(environ, start_response):
    """A WSGI app that answers its thread's name and whether a loop runs there."""
    try:
        asyncio.get_running_loop()
        loop = True
    except RuntimeError:
        loop = False
    thread = pool_of_this_thread()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"thread": thread, "loop": loop}).encode()]


def test_pages_run_in_threads_until_reads_are_moved_to_the_loop():
    bridge = WsgiBridge(
        where_and_how, threads=2, account_threads=1, account_paths=("/accounts/",)
    )
    requests = [
        ("GET", "/games/1/"),
        ("HEAD", "/games/1/"),
        ("POST", "/games/1/move/"),
        ("GET", "/accounts/login/"),
    ]

    def ran() -> dict:
        return {
            request: answer(
                call(bridge, scope(method=request[0], path=request[1]), [body()])
            )[1]
            for request in requests
        }

    assert ran() == {
        ("GET", "/games/1/"): {"thread": "wsgi", "loop": False},
        ("HEAD", "/games/1/"): {"thread": "wsgi", "loop": False},
        ("POST", "/games/1/move/"): {"thread": "wsgi", "loop": False},
        ("GET", "/accounts/login/"): {"thread": "wsgi-account", "loop": False},
    }
    bridge.run_on_loop(("GET", "HEAD"))
    assert ran() == {
        ("GET", "/games/1/"): {"thread": "MainThread", "loop": True},
        ("HEAD", "/games/1/"): {"thread": "MainThread", "loop": True},
        ("POST", "/games/1/move/"): {"thread": "wsgi", "loop": False},
        ("GET", "/accounts/login/"): {"thread": "wsgi-account", "loop": False},
    }


@pytest.mark.parametrize("on_loop", [False, True])
def test_deferred_work_runs_after_the_response_in_a_page_thread(on_loop, caplog):
    """What a page hands to environ[DEFER] runs once the response has been sent,
    in a page thread (never on the loop); a failure is logged, not raised."""
    done = threading.Event()
    events = []

    def record():
        events.append(("deferred", pool_of_this_thread()))
        done.set()

    def fail():
        raise RuntimeError("the database is gone")

    def page(environ, start_response):
        environ[DEFER](fail)
        environ[DEFER](record)
        start_response("204 No Content", [])
        return []

    bridge = WsgiBridge(page, threads=1)
    if on_loop:
        bridge.run_on_loop(("GET",))

    async def run():
        async def receive():
            return body()

        async def send(message):
            events.append(("sent", message["type"]))

        await bridge(scope(), receive, send)
        assert await asyncio.to_thread(done.wait, 5)

    asyncio.run(run())
    assert events == [
        ("sent", "http.response.start"),
        ("sent", "http.response.body"),
        ("deferred", "wsgi"),
    ]
    assert [record.getMessage() for record in caplog.records] == [
        f"deferred work {fail!r} failed"
    ]


@pytest.mark.parametrize("on_loop", [False, True])
def test_pages_keep_djangos_cache_connections_from_one_request_to_the_next(on_loop):
    """As in a page thread, so on the loop: each request runs in a task of its
    own, whose context would otherwise build every cache connection again."""
    used = []

    def page(environ, start_response):
        used.append(caches["default"])
        start_response("204 No Content", [])
        return []

    bridge = WsgiBridge(page, threads=1)
    if on_loop:
        bridge.run_on_loop(("GET",))
    # From a thread of its own, whose context holds no cache yet (the tests'
    # own thread has them all).
    thread = threading.Thread(
        target=lambda: [call(bridge, scope(), [body()]) for _ in range(2)]
    )
    thread.start()
    thread.join()
    first, second = used
    assert first is second
