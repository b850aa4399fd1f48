"""What the fuzz tests (tests/*/test_fuzz_*.py) share: their budget, the hostile
strategies, the routes, and the `world` fixture (registered in tests/conftest.py)
with a game of each kind and a user of each kind to send requests as.

Budget: each test has a fixed number of examples (EXAMPLES; derandomized, no
deadline), so CI time is bounded and every run tries the same requests. Set
FUZZ_SCALE=10 for ten times as many, randomized, when hunting locally; `make
quick` sets 0.25, a quarter of them (and of tests/games/test_stateful.py's runs).
"""

import os
from contextlib import contextmanager
from io import StringIO
from urllib.parse import urlencode, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from games import services

# Below 1 (make quick: 0.25) fewer examples, still derandomized; above 1, more
# and randomized.
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
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
        max_examples=max(1, round(examples * SCALE)),
        derandomize=SCALE <= 1,
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
    # A code, and passkey answers that are not one.
    "123456",
    '{"id": "x"}',
    '{"id": 5, "rawId": null, "response": {"userHandle": 5}}',
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
# -- a guest's pages: their fields --
FIELDS += ["confirmed"]
# -- two-factor pages: their fields --
FIELDS += ["code", "credential", "name", "passwordless"]

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

ACTORS = ["anonymous", "alice", "bob", "carol", "staff", "root", "guest"]
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
    ("POST", "/games/{id}/guest/"),
    ("POST", "/games/{id}/forfeit/"),
    ("POST", "/games/{id}/abort/"),
    ("POST", "/games/{id}/rematch/"),
    ("POST", "/games/{id}/private/"),
    ("GET", "/games/{id}/preview/1.png"),
    ("GET", "/games/{id}/moves.gif"),
    ("GET", "/games/{id}/moves.txt"),
    ("GET", "/games/{id}/embed/"),
    ("GET", "/games/{id}/embed/live/"),
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
    ("POST", "/invitations/{id}/<str:secret>/guest/"),
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
    ("GET", "/accounts/preferences/"),
    ("POST", "/accounts/preferences/"),
    ("POST", "/accounts/private-games/"),
    ("POST", "/accounts/turn-email/"),
    ("GET", "/accounts/turn-email/unsubscribe/MQ:token/"),  # not a valid link
    ("POST", "/accounts/turn-email/unsubscribe/MQ:token/"),
    ("POST", "/accounts/sessions/end/"),
    ("GET", "/accounts/data/"),
]
# -- two-factor authentication and passkeys (allauth.mfa) --
ACCOUNT_ROUTES += [
    ("GET", "/accounts/2fa/"),
    ("GET", "/accounts/2fa/authenticate/"),
    ("POST", "/accounts/2fa/authenticate/"),
    ("GET", "/accounts/2fa/totp/activate/"),
    ("POST", "/accounts/2fa/totp/activate/"),
    ("GET", "/accounts/2fa/totp/deactivate/"),
    ("POST", "/accounts/2fa/totp/deactivate/"),
    ("GET", "/accounts/2fa/recovery-codes/"),
    ("GET", "/accounts/2fa/recovery-codes/generate/"),
    ("POST", "/accounts/2fa/recovery-codes/generate/"),
    ("GET", "/accounts/2fa/recovery-codes/download/"),
    ("GET", "/accounts/2fa/webauthn/"),
    ("GET", "/accounts/2fa/webauthn/add/"),
    ("POST", "/accounts/2fa/webauthn/add/"),
    ("GET", "/accounts/2fa/webauthn/keys/{id}/remove/"),
    ("POST", "/accounts/2fa/webauthn/keys/{id}/remove/"),
    ("GET", "/accounts/2fa/webauthn/keys/{id}/edit/"),
    ("POST", "/accounts/2fa/webauthn/keys/{id}/edit/"),
    ("GET", "/accounts/2fa/webauthn/login/"),
    ("POST", "/accounts/2fa/webauthn/login/"),
]
# -- guests: keeping the account (as the guest actor, and everyone else) --
ACCOUNT_ROUTES += [("GET", "/accounts/keep/"), ("POST", "/accounts/keep/")]
ROUTES += ACCOUNT_ROUTES
# Served by the ASGI stream handler (games.live.streams), not by Django's views.
STREAM_ROUTES = ["/games/{id}/events/", "/lobby/events/"]
OTHER_METHODS = ["HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]

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
def world(alice, bob, carol, make_user, make_guest, play):
    """A game of each kind, and the users to send requests as."""
    make_user("staff", is_staff=True)
    make_user("root", is_staff=True, is_superuser=True)
    make_guest("guest")
    in_progress = services.create_game(creator=alice, opponent=bob)
    play(in_progress, (0, 0), (1, 1))  # alice (X) is to move, ply 2
    finished = services.create_game(creator=alice, opponent=bob)
    play(finished, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    self_play = services.create_game(creator=carol, opponent=carol)
    abortable = services.create_game(creator=bob, opponent=carol)
    play(abortable, (2, 2))  # bob (X) moved, carol has not
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


def is_local(url: str) -> bool:
    """Where a browser following this Location stays on this site."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return parts.scheme in ("http", "https") and parts.netloc == "testserver"
    return not url.replace("\\", "/").startswith("//")


def route_path(template: str, world: dict, game: str, query: dict) -> str:
    """The route with the id of `world`'s `game` in it, and `query`."""
    path = template.format(id=world[game])
    return f"{path}?{urlencode(query)}" if query else path


def last_value(values):
    """What a form reads of a field sent once or repeated: the last value."""
    return values[-1] if isinstance(values, list) else values
