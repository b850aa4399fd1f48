"""Open redirects, brute-force login limits and the admin, through HTTP."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory

from accounts.client import client_ip
from games.models import Game

from ..conftest import PASSWORD
from ..support.hostile import send

# Each of these would send a browser to another site if followed.
HOSTILE_NEXT = [
    "//evil.com",
    "///evil.com",
    "https://evil.com",
    "http://evil.com/path",
    "https:evil.com",
    "/\\evil.com",
    "\\\\evil.com",
    "\\/evil.com",
    "/\t/evil.com",
    " //evil.com",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "http://testserver@evil.com",
    "//testserver.evil.com",
]


def _signup_data(username: str, next_url: str) -> dict:
    return {
        "username": username,
        "password1": PASSWORD,
        "password2": PASSWORD,
        "next": next_url,
    }


@pytest.mark.parametrize("next_url", HOSTILE_NEXT)
def test_login_ignores_a_foreign_next(alice, next_url):
    client = Client()
    page = client.get("/accounts/login/", {"next": next_url})
    assert "evil.com" not in page.text
    assert "javascript" not in page.text.lower()
    response = client.post(
        "/accounts/login/",
        {"login": "alice", "password": PASSWORD, "next": next_url},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"


@pytest.mark.parametrize("next_url", HOSTILE_NEXT)
def test_login_when_already_logged_in_ignores_a_foreign_next(
    client_for, alice, next_url
):
    response = client_for(alice).get("/accounts/login/", {"next": next_url})
    assert response.status_code == 302
    assert response["Location"] == "/"


@pytest.mark.parametrize("next_url", HOSTILE_NEXT)
def test_signup_ignores_a_foreign_next(db, next_url):
    client = Client()
    page = client.get("/accounts/signup/", {"next": next_url})
    assert "evil.com" not in page.text
    response = client.post("/accounts/signup/", _signup_data("newcomer", next_url))
    assert response.status_code == 302
    assert response["Location"] == "/"
    again = client.get("/accounts/signup/", {"next": next_url})
    assert again.status_code == 302
    assert again["Location"] == "/"


@pytest.mark.parametrize("next_url", HOSTILE_NEXT)
def test_logout_ignores_a_foreign_next(client_for, alice, next_url):
    response = client_for(alice).post("/accounts/logout/", {"next": next_url})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"


def test_local_next_is_followed(client_for, alice, game):
    local = f"/games/{game.pk}/"
    login = Client().post(
        "/accounts/login/", {"login": "alice", "password": PASSWORD, "next": local}
    )
    assert login["Location"] == local
    signup = Client().post("/accounts/signup/", _signup_data("newcomer", local))
    assert signup["Location"] == local
    logout = client_for(alice).post("/accounts/logout/", {"next": local})
    assert logout["Location"] == local


@pytest.mark.parametrize("next_url", ["game_detail", "lobby"])
def test_signup_next_is_a_url_never_a_view_name(client_for, alice, next_url):
    """Regression: redirect() used to reverse() a next that looked like a view
    name, a 500 for "game_detail" (it needs an argument)."""
    response = client_for(alice).get("/accounts/signup/", {"next": next_url})
    assert response.status_code == 302
    assert response["Location"] == next_url
    created = Client().post("/accounts/signup/", _signup_data("newcomer", next_url))
    assert created.status_code == 302
    assert created["Location"] == next_url


# Brute force: allauth's limits, configured in settings (ACCOUNT_RATE_LIMITS;
# tests/accounts/test_accounts_limits.py has the details). The login after
# LOGIN_FAILURE_LIMIT failures for one username or from one client address
# answers 429, and so does every login attempt (right or wrong) for
# LOGIN_COOLOFF_MINUTES after.

LOCKED_OUT = "Too many failed logins for this account or from your network"


def _login(client, username, password, address="198.51.100.1", path=None):
    return client.post(
        path or "/accounts/login/",
        {"login": username, "password": password},
        REMOTE_ADDR=address,
    )


def _logged_in_as(client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    if user_id is None:
        return None
    return get_user_model().objects.get(pk=user_id).get_username()


def test_failed_logins_for_one_account_lock_that_account_only(settings, alice, bob):
    limit = settings.LOGIN_FAILURE_LIMIT
    # A distributed attacker: every guess comes from another address.
    for attempt in range(limit):
        failed = _login(Client(), "alice", "wrong", address=f"203.0.113.{attempt}")
        assert failed.status_code == 400
        assert "you specified are not correct" in failed.text

    victim = Client()
    locked = _login(victim, "alice", PASSWORD, address="192.0.2.77")
    assert locked.status_code == 429
    assert LOCKED_OUT in locked.text
    assert f"paused for {settings.LOGIN_COOLOFF_MINUTES} minutes" in locked.text
    assert _logged_in_as(victim) is None

    other = Client()
    assert _login(other, "bob", PASSWORD, address="192.0.2.77").status_code == 302
    assert _logged_in_as(other) == "bob"


def test_failed_logins_from_one_address_lock_that_address_only(
    settings, make_user, carol
):
    limit = settings.LOGIN_FAILURE_LIMIT
    # Password spraying: one guess each for many accounts, from one address.
    for number in range(limit):
        make_user(f"user{number}")
        _login(Client(), f"user{number}", "wrong", address="203.0.113.9")

    from_attacker = Client()
    locked = _login(from_attacker, "carol", PASSWORD, address="203.0.113.9")
    assert locked.status_code == 429
    assert LOCKED_OUT in locked.text
    assert _logged_in_as(from_attacker) is None

    elsewhere = Client()
    assert _login(elsewhere, "carol", PASSWORD, address="192.0.2.8").status_code == 302
    assert _logged_in_as(elsewhere) == "carol"


def test_a_few_mistakes_do_not_lock_anyone_out(settings, alice):
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        _login(Client(), "alice", "wrong")
    client = Client()
    assert _login(client, "alice", PASSWORD).status_code == 302
    assert _logged_in_as(client) == "alice"


def test_the_admin_logs_in_through_the_limited_login(settings, make_user):
    """The admin's own login form would count nothing: it sends visitors to the
    site's login page, which the limits cover."""
    make_user("root", is_staff=True, is_superuser=True)
    page = Client().get("/admin/login/?next=/admin/")
    assert page.status_code == 302
    assert page["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    posted = _login(Client(), "root", "wrong", path="/admin/login/")
    assert posted.status_code == 302
    assert posted["Location"].startswith("/accounts/login/")
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        _login(Client(), "root", "wrong")
    client = Client()
    locked = _login(client, "root", PASSWORD)
    assert locked.status_code == 429
    assert _logged_in_as(client) is None


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "203.0.113.5", "192.0.2.1"),  # no proxy: the header is the client's word
        (1, "203.0.113.5", "203.0.113.5"),
        (1, "10.9.9.9, 203.0.113.5", "203.0.113.5"),  # left entries are spoofable
        (2, "10.9.9.9, 203.0.113.5, 198.51.100.2", "203.0.113.5"),
        (1, "not-an-address", "192.0.2.1"),
        (2, "203.0.113.5", "192.0.2.1"),  # fewer entries than proxies
        (1, "", "192.0.2.1"),
    ],
)
def test_client_address_behind_trusted_proxies(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().get(
        "/", REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR=forwarded
    )
    assert client_ip(request) == expected


@pytest.mark.parametrize("length", [150, 151, 255, 256, 5000])
def test_very_long_usernames_are_refused_not_a_500(settings, alice, length):
    """Regression (django-axes stored the username in a varchar(255), a 500 on
    PostgreSQL): a name of up to 150 characters is a failed login like any
    other; a longer one cannot be an account and the form refuses it."""
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        failed = _login(Client(), "a" * length, "wrong", address="192.0.2.50")
        assert failed.status_code == 400
    last = _login(Client(), "a" * length, "wrong", address="192.0.2.51")
    if length <= 150:
        assert last.status_code == 429
    else:
        assert last.status_code == 400
        assert "Ensure this value has at most 150 characters" in last.text
    assert _login(Client(), "alice", PASSWORD, address="192.0.2.52").status_code == 302


# Hostile input the fuzz tests found to be 500s (tests/test_fuzz_*.py).


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/admin/games/game/?status__exact=%00", None),
        ("/admin/games/game/?q=a%00b", None),
        ("/admin/auth/user/?is_staff__exact=%00", None),
        ("/?page=%00", None),
        ("/games/new/", {"opponent": "\x00", "side": "x"}),
        ("/accounts/login/", {"login": "alice\x00", "password": "x"}),
        ("/games/new/", {"\x00": "x"}),
    ],
)
def test_nul_bytes_are_a_400_before_any_query(client_for, make_user, path, data):
    """Regression: PostgreSQL refuses NUL in text, so a NUL that reached a query
    (the admin's list filters) was a 500 there."""
    root = make_user("root", is_staff=True, is_superuser=True)
    client = client_for(root)
    if data is None:
        response = send(client, "GET", path)
    else:
        response = send(client, "POST", path, data)
    assert response.status_code == 400
    assert "a NUL byte" in response.text


@pytest.mark.parametrize(
    "query",
    [
        "created_at__year=99999999999",
        "created_at__year=9999",
        "created_at__year=9999&created_at__month=12",
        "created_at__year=2026&created_at__month=2&created_at__day=30",
        "created_at__year=-1",
    ],
)
@pytest.mark.parametrize("changelist", ["games/game"])
def test_out_of_range_admin_dates_are_a_bad_filter(
    client_for, make_user, changelist, query
):
    """Regression: Django's date_hierarchy let these escape as OverflowError or
    ValueError, a 500."""
    root = client_for(make_user("root", is_staff=True, is_superuser=True))
    response = send(root, "GET", f"/admin/{changelist}/?{query}")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/{changelist}/?e=1"


# The admin: staff inspect, nobody writes a game there.


def test_non_staff_are_sent_to_the_admin_login(client_for, alice):
    for path in ("/admin/", "/admin/games/game/", "/admin/auth/user/"):
        response = send(client_for(alice), "GET", path)
        assert response.status_code == 302
        assert response["Location"] == f"/admin/login/?next={path}"


def test_staff_without_permissions_see_nothing(client_for, make_user, game):
    staff = client_for(make_user("staff", is_staff=True))
    index = send(staff, "GET", "/admin/")
    assert index.status_code == 200
    assert "have permission to view or edit anything" in index.text
    assert "/admin/games/game/" not in index.text
    for path in (
        "/admin/games/game/",
        f"/admin/games/game/{game.pk}/change/",
        "/admin/account/emailaddress/",
        "/admin/auth/user/",
    ):
        assert send(staff, "GET", path).status_code == 403


@pytest.fixture
def staff_with_every_game_permission(client_for, make_user):
    from django.contrib.auth.models import Permission

    staff = make_user("gamekeeper", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(content_type__app_label="games")
    )
    return client_for(staff)


@pytest.mark.parametrize("who", ["superuser", "staff with every game permission"])
def test_no_admin_form_or_action_can_write_a_game(
    client_for, make_user, staff_with_every_game_permission, play, game, who
):
    play(game, (0, 0), (1, 1))
    if who == "superuser":
        client = client_for(make_user("root", is_staff=True, is_superuser=True))
    else:
        client = staff_with_every_game_permission
    impossible = {
        "player_x": str(game.player_x_id),
        "player_o": str(game.player_o_id),
        "status": "x_won",
        "board": "XXXXXXXXX",
        "move_count": "9",
        "move_order": "012345678",
        "winning_line": "0",
        "version": "1",
    }
    page = send(client, "GET", f"/admin/games/game/{game.pk}/change/")
    assert page.status_code == 200
    assert 'name="board"' not in page.text
    assert 'name="_save"' not in page.text
    for path in (
        f"/admin/games/game/{game.pk}/change/",
        "/admin/games/game/add/",
        "/admin/games/move/add/",
        "/admin/games/series/add/",
    ):
        response = send(client, "POST", path, impossible)
        assert response.status_code in (403, 404)
    # Inline move forms ride on the change form: refused with it.
    inline = impossible | {
        "moves-TOTAL_FORMS": "1",
        "moves-INITIAL_FORMS": "0",
        "moves-0-row": "2",
        "moves-0-col": "2",
        "moves-0-player": "X",
        "moves-0-sequence_number": "3",
    }
    response = send(client, "POST", f"/admin/games/game/{game.pk}/change/", inline)
    assert response.status_code == 403
    assert game.moves.count() == 2


def test_deleting_a_player_who_has_games_is_refused(client_for, make_user, game):
    root = client_for(make_user("root", is_staff=True, is_superuser=True))
    alice_id = game.player_x_id
    response = send(
        root, "POST", f"/admin/auth/user/{alice_id}/delete/", {"post": "yes"}
    )
    assert response.status_code == 200
    assert "would require deleting the following protected related objects" in (
        response.text
    )
    assert get_user_model().objects.filter(pk=alice_id).exists()


def test_a_user_cannot_flood_the_lobby(settings, client_for, alice, bob):
    settings.GAMES_MAX_OPEN_PER_USER = 3
    as_alice = client_for(alice)
    for _ in range(3):
        created = send(as_alice, "POST", "/games/new/", {"opponent": "", "side": "x"})
        assert created.status_code == 302
    refused = send(as_alice, "POST", "/games/new/", {"opponent": "", "side": "o"})
    assert refused.status_code == 429
    assert "You already have 3 open games waiting for players." in refused.text
    # Only open games are limited, and only hers.
    named = send(as_alice, "POST", "/games/new/", {"opponent": "bob", "side": "x"})
    assert named.status_code == 302
    as_bob = client_for(bob)
    assert send(as_bob, "POST", "/games/new/", {"opponent": ""}).status_code == 302
    # Once someone joins one, she may open another.
    open_game = Game.objects.filter(player_x=alice, status="waiting").first()
    assert send(as_bob, "POST", f"/games/{open_game.pk}/join/").status_code == 302
    again = send(as_alice, "POST", "/games/new/", {"opponent": ""})
    assert again.status_code == 302
