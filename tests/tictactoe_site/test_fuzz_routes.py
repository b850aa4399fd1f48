"""Hostile input to every route, with hypothesis: arbitrary and nasty strings,
huge and negative numbers, other scripts' digits ("３"), empty and repeated
fields, wrong content types and broken bodies, junk in ?next=, ?page=, admin
filters and the path, from every kind of visitor. Properties: never a 5xx, a
turned-down request changes nothing stored (tests/support/hostile.py), whatever
was accepted leaves every game consistent (check_games), a redirect stays on
this site; and every route of the app is fuzzed.

Budget and strategies: tests/support/fuzz.py (FUZZ_SCALE=10 runs ten times as
many examples, randomized).
"""

import json
from urllib.parse import urlencode

from django.urls import resolve
from hypothesis import given
from hypothesis import strategies as st

from ..support.fuzz import (
    ACTORS,
    EXAMPLES,
    GAMES,
    OTHER_METHODS,
    ROUTES,
    STREAM_ROUTES,
    assert_games_consistent,
    budget,
    client_as,
    form_data,
    headers,
    hostile_text,
    is_local,
    last_value,
    query_data,
    rolled_back,
    route_path,
)
from ..support.hostile import send
from ..support.routes import routes

ENCODINGS = ["multipart", "urlencoded", "json", "text", "bytes", "bad multipart"]


def encode(data: dict, encoding: str, junk: bytes) -> tuple[bytes | str, str]:
    """(body, content type) for form `data` sent the wrong or a broken way."""
    pairs = [
        (key, item)
        for key, value in data.items()
        for item in (value if isinstance(value, list) else [value])
    ]
    if encoding == "urlencoded":
        return urlencode(pairs), "application/x-www-form-urlencoded"
    if encoding == "json":
        return json.dumps(data), "application/json"
    if encoding == "text":
        return "&".join(f"{key}={value}" for key, value in pairs), "text/plain"
    if encoding == "bytes":
        return junk, "application/x-www-form-urlencoded; charset=utf-8"
    return junk, "multipart/form-data; boundary=junk"


# -- every route ------------------------------------------------------------


@budget(EXAMPLES["every route"])
@given(
    actor=st.sampled_from(ACTORS),
    route=st.sampled_from(ROUTES),
    method=st.one_of(st.none(), st.sampled_from(OTHER_METHODS)),
    game=st.sampled_from(GAMES),
    data=form_data,
    query=query_data,
    encoding=st.sampled_from(ENCODINGS),
    junk=st.binary(max_size=200),
    extra=headers,
)
def test_hostile_requests_to_every_route(
    world, actor, route, method, game, data, query, encoding, junk, extra
):
    route_method, template = route
    method = method or route_method
    path = route_path(template, world, game, query)
    with rolled_back():
        client = client_as(actor)
        if method == "GET":
            send(client, "GET", path, data, **extra)
        elif method == "POST" and encoding == "multipart":
            send(client, "POST", path, data, **extra)
        else:
            body, content_type = encode(data, encoding, junk)
            send(client, method, path, body, content_type=content_type, **extra)
        assert_games_consistent()


@budget(EXAMPLES["paths"])
@given(
    actor=st.sampled_from(["anonymous", "alice"]),
    segment=hostile_text.filter(lambda text: "?" not in text and "#" not in text),
    template=st.sampled_from(
        ["/games/{}/", "/games/{}/move/", "/games/{}/state.json", "/{}", "/admin/{}"]
    ),
    method=st.sampled_from(["GET", "POST"]),
)
def test_hostile_paths(world, actor, segment, template, method):
    with rolled_back():
        response = send(client_as(actor), method, template.format(segment))
    assert response.status_code in (200, 301, 302, 400, 403, 404, 405)


# -- the query parameters pages read: ?next=, ?page= ------------------------

NEXT_ROUTES = [
    ("GET", "/accounts/login/"),
    ("POST", "/accounts/login/"),
    ("GET", "/accounts/signup/"),
    ("POST", "/accounts/signup/"),
    ("POST", "/accounts/logout/"),
    ("GET", "/admin/login/"),
]


@budget(EXAMPLES["next"])
@given(
    actor=st.sampled_from(["anonymous", "alice"]),
    route=st.sampled_from(NEXT_ROUTES),
    next_url=st.one_of(hostile_text, st.lists(hostile_text, min_size=2, max_size=3)),
    in_form=st.booleans(),
)
def test_hostile_next(world, actor, route, next_url, in_form):
    method, path = route
    form = {"next": next_url} if in_form and method == "POST" else {}
    query = {} if form else {"next": last_value(next_url)}
    with rolled_back():
        response = send(
            client_as(actor), method, route_path(path, world, "huge", query), form
        )
    if response.status_code == 302:
        assert is_local(response["Location"])


@budget(EXAMPLES["page"])
@given(
    path=st.sampled_from(["/", "/admin/games/game/"]),
    key=st.sampled_from(
        [
            "page",
            "p",
            "o",
            "q",
            "status__exact",
            "created_at__gte",
            "created_at__year",
            "created_at__month",
        ]
    ),
    value=hostile_text,
)
def test_hostile_page_numbers_and_filters(world, path, key, value):
    with rolled_back():
        response = send(client_as("root"), "GET", f"{path}?{urlencode({key: value})}")
    assert response.status_code in (200, 302, 400, 404)


def test_the_fuzz_reaches_every_route_of_the_app():
    """A new route must be added to ROUTES (tests/support/fuzz.py)."""
    from accounts.urls import urlpatterns as account_patterns
    from games.urls import urlpatterns

    templates = {template for _, template in ROUTES} | set(STREAM_ROUTES)
    fuzzed = {resolve(template.replace("{id}", "1")).url_name for template in templates}
    for written, pattern in routes([*urlpatterns, *account_patterns]):
        assert pattern.name in fuzzed, f"{written} is not fuzzed"
