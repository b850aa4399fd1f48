"""Signing up, logging in and out through the pages (Django's test client)."""

from django.contrib.auth import get_user_model
from django.test import Client

from ..conftest import PASSWORD
from ..support.bodies import text


def test_signup_logs_in_and_lands_in_the_lobby(db):
    client = Client()
    response = client.post(
        "/accounts/signup/",
        {"username": "dora", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    lobby = client.get("/")
    assert lobby.status_code == 200
    assert "Signed in as <strong>dora</strong>" in text(lobby)
    assert "Successfully signed in as dora." in text(lobby)


def test_signup_rejects_mismatched_passwords_and_taken_names(alice):
    client = Client()
    response = client.post(
        "/accounts/signup/",
        {"username": "alice", "password1": PASSWORD, "password2": PASSWORD + "x"},
    )
    assert response.status_code == 400
    assert "A user with that username already exists." in text(response)
    assert "You must type the same password each time." in text(response)
    assert get_user_model().objects.count() == 1


def test_signup_follows_only_local_next(db):
    client = Client()
    data = {"username": "erin", "password1": PASSWORD, "password2": PASSWORD}
    response = client.post("/accounts/signup/?next=https://evil.example/", data)
    assert response["Location"] == "/"
    other = Client()
    data["username"] = "fay"
    response = other.post("/accounts/signup/?next=/games/archive/", data)
    assert response["Location"] == "/games/archive/"


def test_login_and_logout(alice):
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    response = client.post("/accounts/login/", {"login": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405  # POST only
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/")["Location"] == "/accounts/login/?next=/"


def test_the_login_password_is_described_by_its_reset_link_after_it(db):
    """The reset link (the password's help text) follows the password input, so
    Tab reaches the password first."""
    page = text(Client().get("/accounts/login/"))
    assert 'aria-describedby="id_password_helptext" id="id_password">' in page
    assert page.index('id="id_password">') < page.index('id="id_password_helptext"')


def test_wrong_password_is_refused(alice):
    response = Client().post("/accounts/login/", {"login": "alice", "password": "nope"})
    assert response.status_code == 400
    assert "The username and/or password you specified are not correct." in text(
        response
    )
