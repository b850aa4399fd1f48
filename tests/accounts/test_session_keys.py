"""Every session is a listed session (accounts.session_engines): wherever a
browser's session key changes (Keep this account, a password set in the user
admin, one's own password changed from the admin, a rotated secret key), the
account page lists it under its new key, and another browser's "Sign out all
other browsers" ends it."""

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from games import services

from ..conftest import PASSWORD, STAFF_TOTP_SECRET
from ..support.account_client import NEW_PASSWORD, logged_in_as
from ..support.asgi import sessionid
from ..support.totp import totp
from .test_usersessions import END, FIREFOX, PHONE, browser, listed

SITE_PASSWORD_PAGE = "/accounts/password/change/"


def signs_out_the_other(client) -> None:
    response = client.post(END, {"others": "1"})
    assert response.status_code == 302
    page = client.get(SITE_PASSWORD_PAGE)
    assert "Signed out of 1 other browser." in page.text


@pytest.fixture
def root(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def roots_browsers(root):
    """Two browsers root logged in through the login form, before setting up
    the authenticator app the admin asks for (conftest's secret)."""
    Authenticator.objects.filter(user=root).delete()
    browsers = (
        browser("root", "198.51.100.1", FIREFOX),
        browser("root", "198.51.100.2", PHONE),
    )
    Authenticator.objects.create(
        user=root, type=Authenticator.Type.TOTP, data={"secret": STAFF_TOTP_SECRET}
    )
    return browsers


def test_keeping_the_account_keeps_the_browser_listed(alice):
    game = services.create_game(creator=alice, side="o")
    first = Client(HTTP_USER_AGENT=FIREFOX)
    joined = first.post(
        f"/games/{game.pk}/guest/", {"name": "visitor"}, REMOTE_ADDR="198.51.100.1"
    )
    assert joined.status_code == 302
    kept = first.post(
        "/accounts/keep/",
        {"username": "visitor", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert kept.status_code == 302
    rows = listed(first)
    assert len(rows) == 1
    assert rows[0].startswith("This browser · signed in ")
    assert "from 198.51.100.1 " + FIREFOX in rows[0]
    second = Client(HTTP_USER_AGENT=PHONE)
    login = second.post(
        "/accounts/login/",
        {"login": "visitor", "password": NEW_PASSWORD},
        REMOTE_ADDR="198.51.100.2",
    )
    assert login.status_code == 302
    assert len(listed(second)) == 2
    signs_out_the_other(second)
    assert logged_in_as(first) is None
    assert logged_in_as(second) == "visitor"


def test_setting_anothers_password_in_the_admin_keeps_this_browser_listed(
    roots_browsers, alice
):
    first, second = roots_browsers
    response = first.post(
        f"/admin/auth/user/{alice.pk}/password/",
        {
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/admin/auth/user/{alice.pk}/change/"
    rows = listed(first)
    assert len(rows) == 2
    assert rows[0].startswith("This browser · signed in ")
    assert "from 198.51.100.1 " + FIREFOX in rows[0]
    signs_out_the_other(second)
    assert logged_in_as(first) is None
    assert logged_in_as(second) == "root"


def test_a_session_signed_under_a_rotated_secret_key_stays_listed(settings, alice):
    """After DJANGO_SECRET_KEY moves to the fallbacks, Django gives each session a
    new key on its next request; the list follows it."""
    first = browser("alice", "198.51.100.1", FIREFOX)
    old_key = sessionid(first)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-for-this-test-only-0123456789"
    rows = listed(first)
    assert sessionid(first) != old_key
    assert len(rows) == 1
    assert rows[0].startswith("This browser · signed in ")
    assert "from 198.51.100.1 " + FIREFOX in rows[0]
    second = browser("alice", "198.51.100.2", PHONE)
    signs_out_the_other(second)
    assert logged_in_as(first) is None
    assert logged_in_as(second) == "alice"


@pytest.mark.parametrize(
    "admin_page", ["/admin/password_change/", "/admin/auth/user/{pk}/password/"]
)
def test_ones_own_password_changed_from_the_admin_keeps_this_browser_listed(
    roots_browsers, root, admin_page
):
    first, second = roots_browsers
    sent = first.get(admin_page.format(pk=root.pk))
    assert sent.status_code == 302
    assert sent["Location"] == SITE_PASSWORD_PAGE
    changed = first.post(
        SITE_PASSWORD_PAGE,
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302
    assert logged_in_as(second) is None  # the change ended it
    again = second.post(
        "/accounts/login/",
        {"login": "root", "password": NEW_PASSWORD},
        REMOTE_ADDR="198.51.100.2",
    )
    assert again["Location"] == "/accounts/2fa/authenticate/"
    code = second.post("/accounts/2fa/authenticate/", {"code": totp(STAFF_TOTP_SECRET)})
    assert code.status_code == 302
    rows = listed(first)
    assert len(rows) == 2
    assert rows[0].startswith("This browser · signed in ")
    signs_out_the_other(second)
    assert logged_in_as(first) is None
    assert logged_in_as(second) == "root"
