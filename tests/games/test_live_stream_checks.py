"""What a stream's check costs when it opens (games.live.streams): after a
restart every open page reconnects at once, so each check must be cheap. The
game is read with the game page's own statement (not a query the ORM builds
anew for every stream), and the checks of one thread share Django's caches, as
a page thread's requests do (not built again for every stream)."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from games.live import streams

from ..support.asgi import sessionid


# The check closes the thread's connection before and after, as a stream's does:
# not inside a test's transaction.
@pytest.mark.django_db(transaction=True)
def test_a_stream_reads_its_game_with_the_game_pages_own_statement(
    game, carol, client_for
):
    client = client_for(carol)  # a spectator of a started public game
    with CaptureQueriesContext(connection) as page:
        assert client.get(reverse("game_detail", args=[game.pk])).status_code == 200
    page_statements = {query["sql"] for query in page.captured_queries}
    cookie = f"{settings.SESSION_COOKIE_NAME}={sessionid(client)}"
    with CaptureQueriesContext(connection) as check:
        viewer = streams._viewer(cookie, game.pk)
    assert viewer == streams.Viewer(carol.pk, sessionid(client), game.version)
    statements = [query["sql"] for query in check.captured_queries]
    assert len(statements) == 2, statements  # the user (session cached), the game
    assert statements[1] in page_statements


def test_checks_in_one_thread_share_one_session_cache():
    """Two checks in the same pool thread, each handed over as `_identify` hands
    it (a fresh copy of the caller's context each time): one cache object."""

    def session_cache():
        return caches[settings.SESSION_CACHE_ALIAS]

    async def scenario():
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(1) as pool:
            loop.set_default_executor(pool)
            return [
                await asyncio.to_thread(streams._in_thread_context, session_cache)
                for _ in range(2)
            ]

    first, second = asyncio.run(scenario())
    assert first is second
