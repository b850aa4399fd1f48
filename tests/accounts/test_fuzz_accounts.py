"""Hostile input to the account pages, with hypothesis: very long, odd and
hostile names and passwords at login and sign-up, the pages that ask for the
password (only the right one changes anything), email changes and password-reset
requests.

Budget and strategies: tests/support/fuzz.py (FUZZ_SCALE=10 runs ten times as
many examples, randomized).
"""

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from ..conftest import PASSWORD
from ..support.fuzz import (
    EXAMPLES,
    assert_games_consistent,
    budget,
    client_as,
    headers,
    hostile_text,
    is_local,
    query_data,
    rolled_back,
    route_path,
)
from ..support.hostile import is_login_redirect, send

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
        response = send(
            client, "POST", route_path(route, world, "missing", query), data
        )
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
