"""Hostile requests to the live streams, through the ASGI application as a
server calls it (tests/support/asgi.py), with hypothesis: any method, version,
Last-Event-ID, host and headers from every kind of visitor. Never an exception,
only the answers the contract gives, a refusal that says why, nothing stored.

Budget and strategies: tests/support/fuzz.py (FUZZ_SCALE=10 runs ten times as
many examples, randomized).
"""

import asyncio
from urllib.parse import urlencode

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from games.models import Game

from ..support.asgi import http_scope
from ..support.fuzz import (
    ACTORS,
    EXAMPLES,
    GAMES,
    OTHER_METHODS,
    STREAM_ROUTES,
    budget,
    client_as,
    hostile_text,
    query_data,
)
from ..support.hostile import stored_state

# -- the live streams, through the ASGI application as a server calls it -------


@pytest.fixture
def stream_cookies(world):
    """Each actor's session cookie (the streams read no other state)."""
    return {
        actor: client_as(actor).cookies["sessionid"].value
        for actor in ACTORS
        if actor != "anonymous"
    } | {"anonymous": "not-a-session"}


async def _stream_answer(scope: dict, body: bytes) -> list[dict]:
    """What the application sends until its first body part; then the client
    hangs up. Fails if the application raises or does not answer in time."""
    from tictactoe_site.server.asgi import application

    sent: list[dict] = []
    answered = asyncio.Event()
    gone = asyncio.Event()
    asked = False

    async def receive():
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body":
            answered.set()

    task = asyncio.create_task(application(scope, receive, send))
    await asyncio.wait_for(answered.wait(), 10)
    gone.set()
    await asyncio.wait_for(task, 10)  # re-raises what the application raised
    return sent


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "replace")


@pytest.mark.django_db(transaction=True)
@budget(EXAMPLES["streams"])
@given(
    actor=st.sampled_from(ACTORS),
    template=st.sampled_from(STREAM_ROUTES),
    game=st.sampled_from(GAMES),
    # Mostly what a browser sends, so that the checks after the first are reached.
    method=st.one_of(st.just("GET"), st.sampled_from(["POST", *OTHER_METHODS])),
    query=st.one_of(
        st.just({}),
        st.fixed_dictionaries({"v": st.integers(0, 12).map(str)}),
        st.fixed_dictionaries({"v": hostile_text}),
        query_data,
    ),
    last_event_id=st.one_of(st.none(), st.integers(0, 12).map(str), hostile_text),
    host=st.one_of(st.just("testserver"), st.just("testserver"), hostile_text),
    extra=st.lists(st.tuples(hostile_text, hostile_text), max_size=3),
    body=st.binary(max_size=200),
)
@example(  # an id longer than the database's: still the stream handler's
    actor="anonymous",
    template="/games/{id}/events/",
    game="huge",
    method="GET",
    query={},
    last_event_id=None,
    host="testserver",
    extra=[],
    body=b"",
)
def test_hostile_requests_to_the_streams(
    world,
    stream_cookies,
    actor,
    template,
    game,
    method,
    query,
    last_event_id,
    host,
    extra,
    body,
):
    from games.live.hub import hub

    path = template.format(id=world[game])
    cookie = f"sessionid={stream_cookies[actor]}"
    headers = [(b"host", _raw(host)), (b"cookie", _raw(cookie))]
    if last_event_id is not None:
        headers.append((b"last-event-id", _raw(last_event_id)))
    headers += [(_raw(key).lower(), _raw(value)) for key, value in extra]
    scope = http_scope(
        method=method,
        path=path,
        query_string=urlencode(query).encode(),
        headers=headers,
        server_name="testserver",
    )
    before = stored_state()
    try:
        sent = asyncio.run(_stream_answer(scope, body))
    finally:
        hub.stop()
    status = sent[0]["status"]
    event(f"status {status}")
    assert status in (200, 400, 403, 404, 405), sent
    if status == 200:
        if actor == "anonymous":
            # A visitor watches a started public game only (test_public_games.py).
            assert template == "/games/{id}/events/"
            assert Game.objects.filter(
                pk=world[game],
                player_x__isnull=False,
                player_o__isnull=False,
                is_private=False,
            ).exists()
        assert dict(sent[0]["headers"])[b"content-type"].startswith(
            b"text/event-stream"
        )
    else:
        assert sent[1]["body"], "a refusal says why"
    assert stored_state() == before
