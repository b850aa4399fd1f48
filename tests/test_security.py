"""Open redirects, brute-force login throttling and the admin, through HTTP."""

import pytest
from django.test import Client

from .conftest import PASSWORD

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
        {"username": "alice", "password": PASSWORD, "next": next_url},
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
        "/accounts/login/", {"username": "alice", "password": PASSWORD, "next": local}
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
