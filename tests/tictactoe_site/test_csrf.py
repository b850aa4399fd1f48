"""CSRF: every POST route refuses a request without a valid token, through a
client that enforces the checks as a browser's request would meet them. Each
route is also shown to work with a valid token, so a refusal is the token's doing.
"""

import re
from dataclasses import dataclass

import pytest
from django.test import Client

from accounts.models import Guest
from games import services
from games.models import Block, Game

from ..conftest import PASSWORD, play_cells
from ..support.hostile import send

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
FORM_EXPIRED = "This form was rejected because its security token is missing"


@dataclass(frozen=True)
class Route:
    name: str
    actor: str | None  # who sends it (None: anonymous)
    token_page: str  # a page that renders a form, for a valid token
    setup: str  # what the database holds first (see _prepare)


ROUTES = [
    Route("new", "alice", "/", "nothing"),
    Route("move", "alice", "/", "game"),
    Route("forfeit", "alice", "/", "game"),
    Route("abort", "bob", "/", "game"),
    Route("join", "bob", "/", "open game"),
    Route("rematch", "alice", "/", "finished game"),
    Route("new invitation", "alice", "/", "nothing"),
    Route("join invitation", "bob", "/", "invitation"),
    Route("guest invitation", None, "/accounts/login/", "invitation"),
    Route("guest open game", None, "/accounts/login/", "open game"),
    Route("block", "alice", "/players/bob/", "nothing"),
    Route("unblock", "alice", "/players/bob/", "block"),
    Route("logout", "alice", "/", "nothing"),
    Route("end sessions", "alice", "/accounts/password/change/", "nothing"),
    Route("login", None, "/accounts/login/", "nothing"),
    Route("signup", None, "/accounts/signup/", "nothing"),
    Route("keep account", "dora", "/accounts/keep/", "nothing"),
    Route("guest logout", "dora", "/", "nothing"),
    Route("admin delete", "root", "/admin/", "game"),
    Route("admin action", "root", "/admin/", "game"),
]


def _prepare(route: Route, users: dict) -> tuple[str, dict]:
    """(path, form data) of a request that succeeds when it carries a token."""
    alice, bob = users["alice"], users["bob"]
    game = None
    if route.setup == "game":
        game = services.create_game(creator=alice, opponent=bob)
    elif route.setup == "open game":
        game = services.create_game(creator=alice)
    elif route.setup == "invitation":
        game = services.create_invitation(creator=alice).game
    elif route.setup == "block":
        services.block_player(blocker=alice, blocked=bob)
    elif route.setup == "finished game":
        game = services.create_game(creator=alice, opponent=bob)
        play_cells(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    game_id = game.pk if game else None
    secret = game.invitation.secret if route.setup == "invitation" else None
    return {
        "new": ("/games/new/", {"opponent": "bob", "side": "x"}),
        "move": (f"/games/{game_id}/move/", {"row": "1", "col": "1", "ply": "0"}),
        "forfeit": (f"/games/{game_id}/forfeit/", {}),
        "abort": (f"/games/{game_id}/abort/", {}),
        "join": (f"/games/{game_id}/join/", {}),
        "rematch": (f"/games/{game_id}/rematch/", {}),
        "new invitation": ("/games/new/", {"opponent": "", "invite": "1"}),
        "join invitation": (
            f"/invitations/{game_id}/{secret}/join/",
            {},
        ),
        "guest invitation": (
            f"/invitations/{game_id}/{secret}/guest/",
            {"name": "newguest"},
        ),
        "guest open game": (f"/games/{game_id}/guest/", {"name": "newguest"}),
        "block": ("/players/bob/block/", {}),
        "unblock": ("/players/bob/unblock/", {}),
        "logout": ("/accounts/logout/", {}),
        "end sessions": ("/accounts/sessions/end/", {"others": "1"}),
        "login": ("/accounts/login/", {"login": "alice", "password": PASSWORD}),
        "signup": (
            "/accounts/signup/",
            {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD},
        ),
        "keep account": (
            "/accounts/keep/",
            {"username": "dora", "password1": PASSWORD, "password2": PASSWORD},
        ),
        "guest logout": ("/accounts/logout/", {"confirmed": "1"}),
        "admin delete": (f"/admin/games/game/{game_id}/delete/", {"post": "yes"}),
        "admin action": (
            "/admin/games/game/",
            {
                "action": "delete_selected",
                "_selected_action": [str(game_id)],
                "post": "yes",
            },
        ),
    }[route.name]


@pytest.fixture
def users(alice, bob, make_user, make_guest):
    return {
        "alice": alice,
        "bob": bob,
        "dora": make_guest("dora"),
        "root": make_user("root", is_staff=True, is_superuser=True),
    }


def _browser(users, route: Route) -> Client:
    client = Client(enforce_csrf_checks=True)
    if route.actor:
        client.force_login(users[route.actor])
    return client


def _token(client: Client, page: str) -> str:
    response = client.get(page)
    assert response.status_code == 200
    return TOKEN.search(response.text).group(1)


def _session_user(client: Client) -> str | None:
    return client.session.get("_auth_user_id")


def _assert_refused(response):
    assert response.status_code == 403
    assert FORM_EXPIRED in response.text


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_post_without_a_token_is_refused(users, route):
    path, data = _prepare(route, users)
    client = _browser(users, route)
    client.get(route.token_page)  # the CSRF cookie is set; the form token is not sent
    before = _session_user(client)
    _assert_refused(send(client, "POST", path, data))
    assert _session_user(client) == before


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_post_with_a_wrong_or_foreign_token_is_refused(users, route):
    path, data = _prepare(route, users)
    client = _browser(users, route)
    _token(client, route.token_page)
    attacker = Client(enforce_csrf_checks=True)
    foreign = _token(attacker, "/accounts/login/")
    for token in (foreign, "x" * 64, "", "0" * 32):
        response = send(client, "POST", path, data | {"csrfmiddlewaretoken": token})
        _assert_refused(response)


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_post_with_a_valid_token_from_another_origin_is_refused(users, route):
    path, data = _prepare(route, users)
    client = _browser(users, route)
    token = _token(client, route.token_page)
    response = send(
        client,
        "POST",
        path,
        data | {"csrfmiddlewaretoken": token},
        HTTP_ORIGIN="https://evil.example",
    )
    _assert_refused(response)


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_post_with_a_valid_token_works(users, route):
    path, data = _prepare(route, users)
    client = _browser(users, route)
    token = _token(client, route.token_page)
    games_before = Game.objects.count()
    response = client.post(path, data | {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    if route.name in ("new", "rematch", "new invitation"):
        assert Game.objects.count() == games_before + 1
    if route.name in ("join invitation", "guest invitation", "guest open game"):
        assert Game.objects.get().status == "in_progress"
    if route.name in ("block", "unblock"):
        assert Block.objects.exists() == (route.name == "block")
    if route.name == "abort":
        assert Game.objects.get().status == "aborted"
    if route.name == "keep account":
        assert not Guest.objects.exists()
    if route.name == "guest logout":
        assert _session_user(client) is None
    if route.name.startswith("admin") and route.name != "admin login":
        assert Game.objects.count() == games_before - 1


def test_logging_in_rotates_the_csrf_token(alice):
    """A token planted before login (login CSRF, session fixation of the token)
    is worthless afterwards."""
    client = Client(enforce_csrf_checks=True)
    token = _token(client, "/accounts/login/")
    cookie_before = client.cookies["csrftoken"].value
    response = client.post(
        "/accounts/login/",
        {"login": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert client.cookies["csrftoken"].value != cookie_before
    stale = send(client, "POST", "/games/new/", {"csrfmiddlewaretoken": token})
    _assert_refused(stale)


def test_a_forged_login_form_cannot_log_a_victim_in_as_the_attacker(alice, bob):
    """Login CSRF: an attacker's page posts the attacker's credentials (with the
    attacker's own token) from the victim's browser."""
    attacker = Client(enforce_csrf_checks=True)
    attacker_token = _token(attacker, "/accounts/login/")
    victim = Client(enforce_csrf_checks=True)
    victim.get("/accounts/login/")
    forged = send(
        victim,
        "POST",
        "/accounts/login/",
        {
            "login": "bob",
            "password": PASSWORD,
            "csrfmiddlewaretoken": attacker_token,
        },
    )
    _assert_refused(forged)
    assert _session_user(victim) is None


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE"])
def test_logout_is_post_only(client_for, alice, method):
    client = client_for(alice, enforce_csrf_checks=True)
    # PUT and DELETE meet the CSRF check first: give them a valid token.
    token = _token(client, "/")
    response = send(client, method, "/accounts/logout/", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    if method != "HEAD":
        assert "only takes what a button or form of this site sends" in response.text
        assert "Use the Log out button at the top." in response.text
    assert _session_user(client) == str(alice.pk)


# -- account pages --------------------------------------------------

NEW_PASSWORD = "another-long-password-77"


def _reset_form_path(client: Client, user) -> str:
    """Where the emailed link for `user` leads: the set-password form."""
    from allauth.account.forms import default_token_generator
    from allauth.account.utils import user_pk_to_url_str

    token = default_token_generator.make_token(user)
    response = client.get(
        f"/accounts/password/reset/key/{user_pk_to_url_str(user)}-{token}/"
    )
    assert response.status_code == 302
    return response["Location"]


ACCOUNT_ROUTES = {
    # name: (actor, path, data)
    "password change": (
        "alice",
        "/accounts/password/change/",
        {
            "oldpassword": PASSWORD,
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        },
    ),
    "reauthenticate": ("alice", "/accounts/reauthenticate/", {"password": PASSWORD}),
    "email": (
        "alice",
        "/accounts/email/",
        {"email": "new@example.com", "action_add": ""},
    ),
    "close": ("alice", "/accounts/close/", {"password": PASSWORD}),
    "password reset": (
        None,
        "/accounts/password/reset/",
        {"email": "a@example.com"},
    ),
    "set password": (
        None,
        None,  # the emailed link's form, see _reset_form_path
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    ),
}


def _account_request(users, name) -> tuple[Client, str]:
    actor, path, _ = ACCOUNT_ROUTES[name]
    client = Client(enforce_csrf_checks=True)
    if actor:
        client.force_login(users[actor])
    if name == "email":  # it asks for the password first
        token = _token(client, "/accounts/reauthenticate/")
        client.post(
            "/accounts/reauthenticate/",
            {"password": PASSWORD, "csrfmiddlewaretoken": token},
        )
    if path is None:
        path = _reset_form_path(client, users["alice"])
    return client, path


def _alice_row():
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model

    alice = get_user_model().objects.filter(username="alice")
    return (
        alice.values().get(),
        list(EmailAddress.objects.filter(user__in=alice).values()),
    )


def _confirmed_address(user):
    from allauth.account.models import EmailAddress

    EmailAddress.objects.create(
        user=user, email="a@example.com", verified=True, primary=True
    )


@pytest.mark.parametrize("name", ACCOUNT_ROUTES)
def test_account_post_without_a_valid_token_is_refused(users, name):
    _confirmed_address(users["alice"])
    client, path = _account_request(users, name)
    client.get(path)  # the form page: the CSRF cookie is set
    before = _alice_row()
    data = ACCOUNT_ROUTES[name][2]
    for extra in ({}, {"csrfmiddlewaretoken": "x" * 64}):
        _assert_refused(send(client, "POST", path, data | extra))
    assert _alice_row() == before


@pytest.mark.parametrize("name", ACCOUNT_ROUTES)
def test_account_post_with_a_valid_token_works(users, name):
    _confirmed_address(users["alice"])
    client, path = _account_request(users, name)
    token = _token(client, path)
    before = _alice_row()
    response = client.post(
        path, ACCOUNT_ROUTES[name][2] | {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    if name in ("password reset", "reauthenticate"):
        assert _alice_row() == before  # an email; a mark in the session
    else:
        assert _alice_row() != before


# -- two-factor authentication and passkeys (allauth.mfa) --------------------

MFA_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def _factors(user) -> list:
    from allauth.mfa.models import Authenticator

    return list(Authenticator.objects.filter(user=user).order_by("pk").values())


def _give(user, *kinds: str) -> None:
    from allauth.mfa.models import Authenticator

    for kind in kinds:
        data = {"secret": MFA_SECRET} if kind == "totp" else {"name": "Old key"}
        Authenticator.objects.create(user=user, type=kind, data=data)


def _key_pk(user) -> int:
    return _factors(user)[-1]["id"]


MFA_ROUTES = {
    # name: (alice's factors first, path, form data)
    "turn on the app": ((), "/accounts/2fa/totp/activate/", None),
    "remove the app": (("totp",), "/accounts/2fa/totp/deactivate/", {}),
    "new recovery codes": (("totp",), "/accounts/2fa/recovery-codes/generate/", {}),
    "rename a key": (
        ("webauthn",),
        "/accounts/2fa/webauthn/keys/{pk}/edit/",
        {"name": "New"},
    ),
    "remove a key": (("webauthn",), "/accounts/2fa/webauthn/keys/{pk}/remove/", {}),
}


def _mfa_request(users, name) -> tuple[Client, str, dict, str]:
    """alice's browser, her password confirmed, on the route's form page: the
    client, the path, the form and the page's token (a page shown again would
    show a new secret)."""
    from ..support.totp import totp

    kinds, path, data = MFA_ROUTES[name]
    alice = users["alice"]
    _give(alice, *kinds)
    path = path.format(pk=_key_pk(alice) if kinds else None)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    token = _token(client, "/accounts/reauthenticate/")
    client.post(
        "/accounts/reauthenticate/",
        {"password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    page = client.get(path)
    assert page.status_code == 200
    if data is None:  # the code of the secret the page shows
        secret = re.search(r'id="totp-secret"[^>]*>([A-Z2-7]+)<', page.text)[1]
        data = {"code": totp(secret)}
    return client, path, data, TOKEN.search(page.text).group(1)


@pytest.mark.parametrize("name", MFA_ROUTES)
def test_mfa_post_without_a_valid_token_is_refused(users, name):
    client, path, data, _ = _mfa_request(users, name)
    before = _factors(users["alice"])
    for extra in ({}, {"csrfmiddlewaretoken": "x" * 64}):
        _assert_refused(send(client, "POST", path, data | extra))
    assert _factors(users["alice"]) == before


@pytest.mark.parametrize("name", MFA_ROUTES)
def test_mfa_post_with_a_valid_token_works(users, name):
    client, path, data, token = _mfa_request(users, name)
    before = _factors(users["alice"])
    response = client.post(path, data | {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert _factors(users["alice"]) != before


def test_the_second_login_step_needs_a_valid_token(users):
    from ..support.totp import totp

    _give(users["alice"], "totp")
    client = Client(enforce_csrf_checks=True)
    token = _token(client, "/accounts/login/")
    client.post(
        "/accounts/login/",
        {"login": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    path = "/accounts/2fa/authenticate/"
    token = _token(client, path)
    code = {"code": totp(MFA_SECRET)}
    _assert_refused(send(client, "POST", path, code))
    assert _session_user(client) is None
    assert client.post(path, code | {"csrfmiddlewaretoken": token}).status_code == 302
    assert _session_user(client) == str(users["alice"].pk)
