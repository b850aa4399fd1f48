"""Hostile input to every route, with hypothesis.

Arbitrary and nasty strings, huge and negative numbers, floats, other scripts'
digits ("３"), empty and repeated fields (row=1&row=2), very long usernames, wrong
content types and broken bodies, junk in ?next=, ?page=, ?ply= and the path, from
every kind of visitor. Properties: never a 5xx, a turned-down request changes
nothing stored (tests/support/hostile.py), and whatever was accepted leaves every game
consistent (check_games). Where the outcome is known exactly (moves, new games),
the exact status is asserted too.

Budget: each test has a fixed number of examples (EXAMPLES below; derandomized,
no deadline), so CI time is bounded and every run tries the same requests. Set
FUZZ_SCALE=10 for ten times as many, randomized, when hunting locally.
"""

import asyncio
import json
import os
from contextlib import contextmanager
from io import StringIO
from urllib.parse import urlencode, urlsplit

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.urls import resolve
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from games import services
from games.forms import CELL_ERROR
from games.models import Game

from .conftest import PASSWORD, play_cells
from .support.asgi import http_scope
from .support.hostile import is_login_redirect, send, stored_state

SCALE = int(os.environ.get("FUZZ_SCALE", "1"))
EXAMPLES = {
    "every route": 200,
    "paths": 50,
    "moves": 120,
    "new games": 60,
    "accounts": 80,
    "next": 80,
    "page": 50,
    "streams": 150,
    "invitations": 80,
    "blocks": 60,
}


def budget(examples: int):
    return settings(
        max_examples=examples * SCALE,
        derandomize=SCALE == 1,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


@contextmanager
def rolled_back():
    """Run one example in a savepoint that is always rolled back, so that every
    example starts from the same games (an accepted move would change them)."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def assert_games_consistent():
    call_command("check_games", stdout=StringIO())


# -- strategies -----------------------------------------------------------

NASTY = [
    "",
    " ",
    "0",
    "1",
    "2",
    "3",
    "9",
    "10",
    "-1",
    "-0",
    "+1",
    " 1 ",
    "01",
    "002",
    "0002",
    "1.0",
    "1.5",
    "1e2",
    "0x1",
    "1_0",
    "１",
    "３",
    "٣",
    "۲",
    "²",
    "Ⅲ",
    "𝟙",
    "1\x00",
    "\x00",
    "\n",
    "NaN",
    "inf",
    "-inf",
    "None",
    "null",
    "true",
    "[]",
    "{}",
    "x",
    "o",
    "random",
    "X",
    "alice",
    "bob",
    " alice ",
    "ALICE",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "%00",
    "%",
    "\\",
    "\u202e",
    "\ufeff1",
    "99999999999999999999999999",
    "-99999999999999999999",
    "9223372036854775808",
    "a" * 151,
    "a" * 10_000,
    "//evil.com",
    "https://evil.com",
    "/\\evil.com",
    "javascript:alert(1)",
    "game_detail",
    "lobby",
]

hostile_text = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=40),
    st.integers().map(str),
    st.floats().map(str),
    st.text(min_size=150, max_size=400),
)

FIELDS = [
    "row",
    "col",
    "ply",
    "opponent",
    "side",
    "username",
    "password",
    "password1",
    "password2",
    "next",
    "page",
    "csrfmiddlewaretoken",
    "action",
    "_selected_action",
    "post",
    "status",
    "board",
    "player_x",
    "invite",
]
# -- account pages: their fields --
FIELDS += ["email", "old_password", "new_password1", "new_password2"]

field_values = st.one_of(hostile_text, st.lists(hostile_text, max_size=3))
form_data = st.dictionaries(
    st.one_of(st.sampled_from(FIELDS), st.text(min_size=1, max_size=12)),
    field_values,
    max_size=6,
)

QUERY_KEYS = ["next", "page", "ply", "q", "o", "p", "status__exact", "e", "_popup"]
query_data = st.dictionaries(
    st.one_of(st.sampled_from(QUERY_KEYS), st.text(min_size=1, max_size=12)),
    hostile_text,
    max_size=3,
)

ACTORS = ["anonymous", "alice", "bob", "carol", "staff", "root"]
GAMES = [
    "in progress",
    "finished",
    "open",
    "self-play",
    "abortable",
    "aborted",
    "invitation",
    "missing",
    "huge",
]
ROUTES = [
    ("GET", "/"),
    ("GET", "/games/{id}/"),
    ("GET", "/games/{id}/state.json"),
    ("GET", "/games/{id}/live/"),
    ("GET", "/lobby/live/"),
    ("GET", "/games/archive/"),
    ("GET", "/players/<str:username>/"),  # a literal username that does not exist
    ("POST", "/games/new/"),
    ("POST", "/games/{id}/move/"),
    ("POST", "/games/{id}/join/"),
    ("POST", "/games/{id}/forfeit/"),
    ("POST", "/games/{id}/abort/"),
    ("POST", "/games/{id}/rematch/"),
    ("GET", "/accounts/login/"),
    ("POST", "/accounts/login/"),
    ("GET", "/accounts/signup/"),
    ("POST", "/accounts/signup/"),
    ("POST", "/accounts/logout/"),
    ("GET", "/admin/"),
    ("POST", "/admin/login/"),
    ("GET", "/admin/games/game/"),
    ("POST", "/admin/games/game/"),
    ("GET", "/admin/games/game/{id}/change/"),
    ("POST", "/admin/games/game/{id}/change/"),
    ("POST", "/admin/games/game/{id}/delete/"),
    ("POST", "/admin/games/game/add/"),
    # Literal secrets and usernames: links that never existed, unknown players.
    ("GET", "/invitations/{id}/<str:secret>/"),
    ("POST", "/invitations/{id}/<str:secret>/join/"),
    ("POST", "/players/<str:username>/block/"),
    ("POST", "/players/<str:username>/unblock/"),
    ("GET", "/admin/games/block/"),
]
# -- account pages: change, reset, email, close --
ACCOUNT_ROUTES = [
    ("GET", "/accounts/reauthenticate/"),
    ("POST", "/accounts/reauthenticate/"),
    ("GET", "/accounts/password/change/"),
    ("POST", "/accounts/password/change/"),
    ("GET", "/accounts/password/set/"),
    ("POST", "/accounts/password/set/"),
    ("GET", "/accounts/password/reset/"),
    ("POST", "/accounts/password/reset/"),
    ("GET", "/accounts/password/reset/done/"),
    ("GET", "/accounts/password/reset/key/1-token/"),  # not a valid link
    ("POST", "/accounts/password/reset/key/1-token/"),
    ("GET", "/accounts/password/reset/key/done/"),
    ("GET", "/accounts/email/"),
    ("POST", "/accounts/email/"),
    ("GET", "/accounts/confirm-email/"),
    ("GET", "/accounts/confirm-email/MQ:key/"),  # not a valid link
    ("POST", "/accounts/confirm-email/MQ:key/"),
    ("GET", "/accounts/inactive/"),
    ("GET", "/accounts/close/"),
    ("POST", "/accounts/close/"),
    ("POST", "/accounts/turn-email/"),
    ("GET", "/accounts/turn-email/unsubscribe/MQ:token/"),  # not a valid link
    ("POST", "/accounts/turn-email/unsubscribe/MQ:token/"),
]
ROUTES += ACCOUNT_ROUTES
# Served by the ASGI stream handler (games.streams), not by Django's views.
STREAM_ROUTES = ["/games/{id}/events/", "/lobby/events/"]
OTHER_METHODS = ["HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
ENCODINGS = ["multipart", "urlencoded", "json", "text", "bytes", "bad multipart"]

headers = st.fixed_dictionaries(
    {},
    optional={
        "HTTP_X_FORWARDED_FOR": hostile_text,
        "HTTP_USER_AGENT": hostile_text,
        "HTTP_ACCEPT": hostile_text,
        "HTTP_REFERER": hostile_text,
        "HTTP_ACCEPT_LANGUAGE": hostile_text,
    },
)


# -- the world the requests are sent into --------------------------------


@pytest.fixture
def world(alice, bob, carol, make_user):
    """A game of each kind, and the users to send requests as."""
    make_user("staff", is_staff=True)
    make_user("root", is_staff=True, is_superuser=True)
    in_progress = services.create_game(creator=alice, opponent=bob)
    play_cells(in_progress, (0, 0), (1, 1))  # alice (X) is to move, ply 2
    finished = services.create_game(creator=alice, opponent=bob)
    play_cells(finished, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    self_play = services.create_game(creator=carol, opponent=carol)
    abortable = services.create_game(creator=bob, opponent=carol)
    play_cells(abortable, (2, 2))  # bob (X) moved, carol has not
    aborted = services.create_game(creator=carol, opponent=alice)
    services.abort(game_id=aborted.pk, user=alice)
    invitation = services.create_invitation(creator=carol)
    return {
        "invitation": invitation.game_id,
        "invitation secret": invitation.secret,
        "in progress": in_progress.pk,
        "finished": finished.pk,
        "open": services.create_game(creator=carol).pk,
        "self-play": self_play.pk,
        "abortable": abortable.pk,
        "aborted": aborted.pk,
        "missing": 0,
        "huge": 10**30,
    }


def client_as(actor: str) -> Client:
    client = Client()
    if actor != "anonymous":
        client.force_login(get_user_model().objects.get(username=actor))
    return client


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


def is_local(url: str) -> bool:
    """Where a browser following this Location stays on this site."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return parts.scheme in ("http", "https") and parts.netloc == "testserver"
    return not url.replace("\\", "/").startswith("//")


def _path(template: str, world: dict, game: str, query: dict) -> str:
    path = template.format(id=world[game])
    return f"{path}?{urlencode(query)}" if query else path


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
    path = _path(template, world, game, query)
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
    query = {} if form else {"next": _last(next_url)}
    with rolled_back():
        response = send(
            client_as(actor), method, _path(path, world, "huge", query), form
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


# -- moves: the exact answer is known ---------------------------------------


def _number(value, largest: int) -> int | None:
    """What the contract accepts: plain ASCII digits (at most 3) up to `largest`."""
    text = str(value).strip()
    if text.isascii() and text.isdigit() and len(text) <= 3 and int(text) <= largest:
        return int(text)
    return None


def _has_nul(data: dict) -> bool:
    values = [
        v
        for value in data.values()
        for v in (value if isinstance(value, list) else [value])
    ]
    return any("\x00" in str(value) for value in values)


def _last(values):
    return values[-1] if isinstance(values, list) else values


@budget(EXAMPLES["moves"])
@given(
    row=st.one_of(st.none(), field_values),
    col=st.one_of(st.none(), field_values),
    ply=st.one_of(st.none(), st.sampled_from(["", "2", "0", "3"]), field_values),
)
def test_hostile_move_fields(world, row, col, ply):
    """alice is to move in the game in progress (ply 2; (0,0) and (1,1) taken)."""
    game_id = world["in progress"]
    data = {
        name: value
        for name, value in (("row", row), ("col", col), ("ply", ply))
        if value is not None and value != []
    }
    with rolled_back():
        response = send(client_as("alice"), "POST", f"/games/{game_id}/move/", data)
        game = Game.objects.get(pk=game_id)
        assert_games_consistent()
    cell = (_number(_last(row or ""), 2), _number(_last(col or ""), 2))
    seen = _last(ply) if ply not in (None, []) else ""
    if _has_nul(data):
        assert response.status_code == 400
        assert "a NUL byte" in response.text
    elif None in cell:
        assert response.status_code == 400
        assert CELL_ERROR in response.text
    elif seen != "" and _number(seen, 9) is None:
        assert response.status_code == 400
        assert "ply must be the number of moves" in response.text
    elif (seen != "" and _number(seen, 9) != 2) or cell in ((0, 0), (1, 1)):
        assert response.status_code == 409
    else:
        assert response.status_code == 302
        assert game.move_count == 3
        assert game.board[cell[0] * 3 + cell[1]] == "X"


# -- new games: opponent and side --------------------------------------------


@budget(EXAMPLES["new games"])
@given(
    opponent=st.one_of(st.none(), field_values), side=st.one_of(st.none(), field_values)
)
def test_hostile_new_game_fields(world, opponent, side):
    data = {
        name: value
        for name, value in (("opponent", opponent), ("side", side))
        if value is not None and value != []
    }
    with rolled_back():
        before = Game.objects.count()
        response = send(client_as("bob"), "POST", "/games/new/", data)
        created = Game.objects.count() - before
        assert_games_consistent()
    name = str(_last(opponent) if opponent not in (None, []) else "").strip()
    chosen = _last(side) if side not in (None, []) else ""
    valid = name in ("", "alice", "bob", "carol", "staff", "root") and chosen in (
        "",
        "x",
        "o",
        "random",
    )
    if _has_nul(data):
        assert response.status_code == 400
        assert created == 0
    elif valid:
        assert response.status_code == 302
        assert created == 1
    else:
        assert response.status_code == 400
        assert created == 0


# -- accounts: very long, odd and hostile names -------------------------------


@budget(EXAMPLES["accounts"])
@given(
    route=st.sampled_from(["/accounts/login/", "/accounts/signup/", "/admin/login/"]),
    username=st.one_of(
        hostile_text, st.text(min_size=140, max_size=160), st.just("alice")
    ),
    password=st.one_of(hostile_text, st.just("a-long-test-password-42")),
    repeat=st.booleans(),
    query=query_data,
)
def test_hostile_credentials(world, route, username, password, repeat, query):
    data = {
        "username": [username, "alice"] if repeat else username,
        "login": [username, "alice"] if repeat else username,
        "password": password,
        "password1": password,
        "password2": password,
    }
    with rolled_back():
        client = Client()
        response = send(client, "POST", _path(route, world, "missing", query), data)
        logged_in = client.session.get("_auth_user_id")
    if response.status_code == 302 and not is_login_redirect(response):
        # Only the right password for an existing account, or a new account.
        assert logged_in is not None
        assert is_local(response["Location"])
    else:
        assert logged_in is None
        # The admin's login page sends everyone to the site's.
        assert response.status_code in (200, 400, 429) or is_login_redirect(response)


# -- account pages: hostile email addresses and passwords ----------


@budget(EXAMPLES["accounts"])
@given(
    route=st.sampled_from(
        [
            "/accounts/reauthenticate/",
            "/accounts/close/",
            "/accounts/password/change/",
        ]
    ),
    password=st.one_of(hostile_text, st.just(PASSWORD)),
    repeat=st.booleans(),
)
def test_hostile_password_checks(world, route, password, repeat):
    """alice's own account pages that ask for her password: only her password
    changes anything; everything else is a 400 (or the 429 of the login
    limits) and leaves her account as it was."""
    data = {
        # A form reads the last of repeated fields: the right password first.
        "password": [PASSWORD, password] if repeat else password,
        "oldpassword": password,
        "password1": password,
        "password2": password,
    }
    with rolled_back():
        response = send(client_as("alice"), "POST", route, data)
        alice = get_user_model().objects.get(username="alice")
        assert_games_consistent()
    if response.status_code == 302:
        assert password == PASSWORD
        if route == "/accounts/close/":
            assert not alice.is_active
    else:
        assert response.status_code in (400, 429)
        assert alice.is_active


@budget(EXAMPLES["accounts"])
@given(
    email=st.one_of(hostile_text, st.emails().map(str)),
    action=st.sampled_from(["action_add", "action_send", "action_remove", "other"]),
    repeat=st.booleans(),
)
def test_hostile_email_changes(world, email, action, repeat):
    """After the password check: a valid address is added unconfirmed (one mail
    goes out), anything else changes nothing."""
    data = {"email": [email, "x@example.com"] if repeat else email, action: ""}
    with rolled_back():
        client = client_as("alice")
        send(client, "POST", "/accounts/reauthenticate/", {"password": PASSWORD})
        response = send(client, "POST", "/accounts/email/", data)
        stored = list(
            EmailAddress.objects.values_list("user__username", "email", "verified")
        )
    assert response.status_code in (302, 400)
    assert all(user == "alice" and not verified for user, _, verified in stored)
    assert len(stored) <= 1


@budget(EXAMPLES["accounts"])
@given(email=st.one_of(hostile_text, st.emails().map(str)), extra=headers)
def test_hostile_password_reset_requests(world, email, extra):
    with rolled_back():
        response = send(
            Client(), "POST", "/accounts/password/reset/", {"email": email}, **extra
        )
    assert response.status_code in (302, 400, 429)
    if response.status_code == 302:
        assert response["Location"] == "/accounts/password/reset/done/"


# -- invitation links and blocks ------------------------------------------------

path_segment = hostile_text.filter(lambda text: "?" not in text and "#" not in text)


@budget(EXAMPLES["invitations"])
@given(
    actor=st.sampled_from(ACTORS),
    secret=st.one_of(path_segment, st.just(None)),
    join=st.booleans(),
)
@example(actor="bob", secret="A" * 43, join=True)
def test_hostile_invitation_links(world, actor, secret, join):
    """carol's invitation: only its own secret (None here) opens it."""
    real = world["invitation secret"]
    path = f"/invitations/{world['invitation']}/{real if secret is None else secret}/"
    with rolled_back():
        if join:
            response = send(client_as(actor), "POST", path + "join/")
        else:
            response = send(client_as(actor), "GET", path)
        joined = Game.objects.get(pk=world["invitation"]).player_o
        assert_games_consistent()
    if secret is not None and secret != real:
        assert response.status_code in (400, 404) or is_login_redirect(response)
    elif actor == "anonymous" and join:
        assert is_login_redirect(response)
    elif actor == "anonymous":
        assert response.status_code == 200
    elif actor == "carol":
        assert response.status_code == (409 if join else 200)
    else:
        assert response.status_code == (302 if join else 200)
        assert (joined.username if joined else None) == (actor if join else None)


@budget(EXAMPLES["blocks"])
@given(
    actor=st.sampled_from(["alice", "bob", "root"]),
    username=st.one_of(st.sampled_from(["alice", "bob", "carol"]), path_segment),
    action=st.sampled_from(["block", "unblock"]),
)
def test_hostile_block_names(world, actor, username, action):
    from games.models import Block

    with rolled_back():
        response = send(client_as(actor), "POST", f"/players/{username}/{action}/")
        stored = list(
            Block.objects.values_list("blocker__username", "blocked__username")
        )
    players = [name for name in ACTORS if name != "anonymous"]
    if username in players and (action, username) != ("block", actor):
        assert response.status_code == 302
        assert stored == ([(actor, username)] if action == "block" else [])
    else:
        assert response.status_code in (400, 404)
        assert stored == []


def test_the_fuzz_reaches_every_route_of_the_app():
    """A new route must be added to ROUTES above."""
    from accounts.urls import urlpatterns as account_patterns
    from games.urls import urlpatterns

    templates = {template for _, template in ROUTES} | set(STREAM_ROUTES)
    fuzzed = {resolve(template.replace("{id}", "1")).url_name for template in templates}
    for pattern in [*urlpatterns, *account_patterns]:
        assert pattern.name in fuzzed, f"{pattern.pattern} is not fuzzed"


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
    from tictactoe_site.asgi import application

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
    from games.live import hub

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
        assert actor != "anonymous"
        assert dict(sent[0]["headers"])[b"content-type"].startswith(
            b"text/event-stream"
        )
    else:
        assert sent[1]["body"], "a refusal says why"
    assert stored_state() == before
