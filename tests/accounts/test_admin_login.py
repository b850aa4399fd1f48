"""The admin logs nobody in (accounts.admin_gate): /admin/login/ never reads a
password, whatever the method and whoever asks; a visitor is sent to the site's
login (its limits, its second factor) and back, staff logged in go on to the
admin, anyone else logged in is refused. The admin's password pages for one's
own account are the site's page."""

import pytest
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.test import Client

from ..conftest import PASSWORD
from ..support.account_client import logged_in_as
from ..support.hostile import send

ADDRESS = "198.51.100.9"
SITE_PASSWORD_PAGE = "/accounts/password/change/"
BACK_TO_THE_ADMIN = "/accounts/login/?next=%2Fadmin%2F"


@pytest.fixture
def root(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def staff(make_user):
    return make_user("staff", is_staff=True)


def admin_login(client, password: str, **data):
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": "root", "password": password, "next": "/admin/", **data},
        REMOTE_ADDR=ADDRESS,
    )


def test_a_staff_session_posting_the_superusers_password_stays_the_staff_members(
    client_for, staff, root
):
    client = client_for(staff)
    for guess in range(20):
        wrong = admin_login(client, f"guess-{guess}")
        assert wrong.status_code == 302
        assert wrong["Location"] == "/admin/"
    right = admin_login(client, PASSWORD)
    assert right.status_code == 302
    assert right["Location"] == "/admin/"
    assert logged_in_as(client) == "staff"
    assert client.get("/admin/auth/user/").status_code == 403
    # The guesses were never checked, so none counted: the site's login for
    # root from that address answers as for anyone, with the second step.
    site = Client().post(
        "/accounts/login/", {"login": "root", "password": PASSWORD}, REMOTE_ADDR=ADDRESS
    )
    assert site.status_code == 302
    assert site["Location"] == "/accounts/2fa/authenticate/"
    root.refresh_from_db()
    assert root.last_login is None


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/admin/login/", BACK_TO_THE_ADMIN),
        (
            "/admin/login/?next=/admin/auth/user/",
            "/accounts/login/?next=%2Fadmin%2Fauth%2Fuser%2F",
        ),
        ("/admin/login/?next=https://evil.example/", BACK_TO_THE_ADMIN),
        ("/admin/login/?next=//evil.example/", BACK_TO_THE_ADMIN),
    ],
)
def test_a_visitor_is_sent_to_the_sites_login_and_back(root, method, path, location):
    client = Client()
    data = {"username": "root", "password": PASSWORD} if method == "POST" else None
    response = send(client, method, path, data)
    assert response.status_code == 302
    assert response["Location"] == location
    assert logged_in_as(client) is None
    root.refresh_from_db()
    assert root.last_login is None


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/admin/login/", "/admin/"),
        ("/admin/login/?next=/admin/games/game/", "/admin/games/game/"),
        ("/admin/login/?next=https://evil.example/", "/admin/"),
        ("/admin/login/?next=nowhere", "nowhere"),
    ],
)
def test_staff_logged_in_go_on_to_the_admin(client_for, root, path, location):
    response = client_for(root).get(path)
    assert response.status_code == 302
    assert response["Location"] == location


def test_staff_without_a_second_factor_meet_the_gate_after_the_login_page(
    client_for, staff
):
    Authenticator.objects.filter(user=staff).delete()
    client = client_for(staff)
    response = client.get("/admin/login/")
    assert response["Location"] == "/admin/"
    assert client.get("/admin/")["Location"] == "/accounts/2fa/"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_others_logged_in_are_refused(client_for, alice, root, method):
    client = client_for(alice)
    data = {"username": "root", "password": PASSWORD} if method == "POST" else None
    response = send(client, method, "/admin/login/", data)
    assert response.status_code == 403
    assert logged_in_as(client) == "alice"


# -- the admin's password pages -------------------------------------------------


def own_password_pages(user) -> list[str]:
    return [
        "/admin/password_change/",
        "/admin/password_change/done/",
        f"/admin/auth/user/{user.pk}/password/",
    ]


def test_ones_own_password_is_changed_on_the_sites_page(client_for, root):
    client = client_for(root)
    new = "an-admin-form-password-55"
    for path in own_password_pages(root):
        for method, data in (
            ("GET", None),
            (
                "POST",
                {
                    "old_password": PASSWORD,
                    "new_password1": new,
                    "new_password2": new,
                    "password1": new,
                    "password2": new,
                    "usable_password": "true",
                },
            ),
        ):
            response = send(client, method, path, data)
            assert response.status_code == 302, path
            assert response["Location"] == SITE_PASSWORD_PAGE
    stored = get_user_model().objects.get(pk=root.pk)
    assert stored.check_password(PASSWORD)
    assert logged_in_as(client) == "root"


def test_anothers_password_is_still_set_in_the_user_admin(client_for, root, alice):
    new = "an-admin-set-password-66"
    response = client_for(root).post(
        f"/admin/auth/user/{alice.pk}/password/",
        {"password1": new, "password2": new, "usable_password": "true"},
    )
    assert response.status_code == 302
    assert response["Location"] == f"/admin/auth/user/{alice.pk}/change/"
    assert get_user_model().objects.get(pk=alice.pk).check_password(new)
