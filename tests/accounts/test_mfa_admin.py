"""Staff open the admin only with a second factor (accounts.admin_gate): without
one they are sent to set it up, and nothing of the admin answers them; with one
the admin opens; nobody else meets anything new. The admin's login is the site's,
second step included."""

import pytest
from allauth.mfa.models import Authenticator
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from games.models import Game

from ..conftest import PASSWORD, STAFF_TOTP_SECRET
from ..support.account_client import logged_in_as
from ..support.hostile import send
from ..support.totp import totp

SET_UP_FIRST = (
    "Staff open the admin only with a second factor: set up an authenticator app "
    "or a passkey here, then open the admin again."
)
ADMIN_PAGES = ["/admin/", "/admin/games/game/", "/admin/auth/user/", "/admin/nothing/"]


def without_second_factor(user):
    Authenticator.objects.filter(user=user).delete()
    return user


@pytest.fixture
def root(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_staff_without_a_second_factor_are_sent_to_set_one_up(client_for, root, path):
    client = client_for(without_second_factor(root))
    response = send(client, "GET", path)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/"
    page = client.get("/accounts/2fa/")
    assert SET_UP_FIRST in page.text
    assert "Set up an authenticator app" in page.text


def test_plain_staff_without_a_second_factor_are_sent_to_set_one_up(
    client_for, make_user
):
    """Staff who are not superusers meet the same check."""
    staff = without_second_factor(make_user("staff", is_staff=True))
    response = client_for(staff).get("/admin/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/"


def test_staff_without_a_second_factor_change_nothing_in_the_admin(
    client_for, root, game
):
    client = client_for(without_second_factor(root))
    response = send(
        client, "POST", f"/admin/games/game/{game.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/"
    assert Game.objects.filter(pk=game.pk).exists()


@pytest.mark.parametrize("kind", ["totp", "webauthn"])
def test_staff_with_a_second_factor_open_the_admin(client_for, make_user, kind):
    staff = without_second_factor(make_user("staff", is_staff=True))
    Authenticator.objects.create(user=staff, type=kind, data={})
    client = client_for(staff)
    assert client.get("/admin/").status_code == 200


def test_recovery_codes_alone_are_no_second_factor(client_for, root):
    without_second_factor(root)
    Authenticator.objects.create(user=root, type="recovery_codes", data={})
    response = client_for(root).get("/admin/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/"


@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_others_meet_the_admin_login_as_before(client_for, alice, path):
    for client in (Client(), client_for(alice)):
        response = send(client, "GET", path)
        assert response.status_code == 302
        assert response["Location"] == f"/admin/login/?next={path}"


def test_the_admin_login_asks_staff_for_their_second_factor(root):
    client = Client()
    asked = client.get("/admin/login/?next=/admin/")
    assert asked["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    password = client.post(
        "/accounts/login/", {"login": "root", "password": PASSWORD, "next": "/admin/"}
    )
    assert password.status_code == 302
    assert password["Location"] == "/accounts/2fa/authenticate/"
    assert client.get("/admin/")["Location"] == "/admin/login/?next=/admin/"
    code = client.post("/accounts/2fa/authenticate/", {"code": totp(STAFF_TOTP_SECRET)})
    assert code.status_code == 302
    assert code["Location"] == "/admin/"
    assert logged_in_as(client) == "root"
    assert client.get("/admin/").status_code == 200


def lobby_queries(client) -> int:
    client.get("/")  # the session is cached, as for any returning player
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def test_pages_outside_the_admin_cost_staff_nothing_more(client_for, root, alice):
    """The check runs in the admin's views only: the lobby of a staff member
    without a second factor costs what a player's does."""
    staff = client_for(without_second_factor(root))
    assert lobby_queries(staff) == lobby_queries(client_for(alice))


# -- second factors in the admin: no secret shown, none added or edited --------


@pytest.fixture
def alices_factors(alice):
    app = Authenticator.objects.create(
        user=alice, type="totp", data={"secret": "ALICESSECRETAPPKEYBASE32ABCDEFGH"}
    )
    codes = Authenticator.objects.create(
        user=alice, type="recovery_codes", data={"seed": "alices-recovery-seed-hex"}
    )
    return app, codes


def test_the_admin_shows_no_second_factors_secret(client_for, root, alices_factors):
    app, codes = alices_factors
    client = client_for(root)
    for path in (
        "/admin/mfa/authenticator/",
        f"/admin/mfa/authenticator/{app.pk}/change/",
        f"/admin/mfa/authenticator/{codes.pk}/change/",
    ):
        page = send(client, "GET", path)
        assert page.status_code == 200
        assert "ALICESSECRETAPPKEYBASE32ABCDEFGH" not in page.text
        assert "alices-recovery-seed-hex" not in page.text
    assert "TOTP Authenticator" in page.text or "Recovery codes" in page.text


def test_nobody_adds_or_edits_a_second_factor_in_the_admin(
    client_for, root, alice, alices_factors
):
    app, _ = alices_factors
    client = client_for(root)
    before = list(Authenticator.objects.order_by("pk").values())
    forged = {"user": str(root.pk), "type": "totp", "data": '{"secret": "AAAA"}'}
    assert (
        send(client, "POST", "/admin/mfa/authenticator/add/", forged).status_code == 403
    )
    edit = send(client, "POST", f"/admin/mfa/authenticator/{app.pk}/change/", forged)
    assert edit.status_code == 403
    assert list(Authenticator.objects.order_by("pk").values()) == before


def test_deleting_the_last_factor_in_the_admin_takes_the_recovery_codes(
    client_for, root, alice, alices_factors
):
    """For someone who lost their phone and their codes: staff remove the app;
    codes without a factor would be a second factor nobody set up."""
    app, _ = alices_factors
    response = send(
        client_for(root),
        "POST",
        f"/admin/mfa/authenticator/{app.pk}/delete/",
        {"post": "yes"},
    )
    assert response.status_code == 302
    assert not Authenticator.objects.filter(user=alice).exists()
    assert Authenticator.objects.filter(user=root).exists()  # root's own app stays
