"""The browser tests' live server answers requests that arrive at once, as a
browser sends them (a page's background POST beside the next page's load): its
threads share the test's one in-memory SQLite connection (conftest.py,
`live_server_requests`). Without the lock, some of these answered 500 or 503
("bad parameter or other API misuse")."""

import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.test import Client

# Only an in-memory SQLite database is shared between threads.
pytestmark = pytest.mark.sqlite_only


def test_requests_at_once_all_answer(live_server, make_user):
    client = Client()
    client.force_login(make_user("ann"))
    session = client.cookies[settings.SESSION_COOKIE_NAME].value

    def lobby(_) -> int:
        request = urllib.request.Request(
            f"{live_server.url}/", headers={"Cookie": f"sessionid={session}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lobby, range(200)))
    assert statuses == [200] * 200
