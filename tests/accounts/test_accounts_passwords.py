"""Changing the password through HTTP (this session stays, every other ends) and
resetting it by email: the same answer for any address, a link only to a
confirmed one, usable once, until it expires; reset requests limited per
address and per client.
"""

from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client
from django.utils import timezone

from games import services

from ..conftest import PASSWORD
from ..support.account_client import (
    LINK_INVALID,
    NEW_PASSWORD,
    WRONG_PASSWORD,
    ask_for_reset,
    confirmed,
    logged_in_as,
    login,
    mailed_link,
)

REQUESTS_PAUSED = (
    "Too many password-reset requests for this address or from your network. "
    "Please wait 15 minutes and try again."
)


# -- password change --------------------------------------------------------------


def change_password(client, old=PASSWORD, new=NEW_PASSWORD):
    return client.post(
        "/accounts/password/change/",
        {"oldpassword": old, "password1": new, "password2": new},
    )


def test_password_change_needs_a_login(client, db):
    response = client.get("/accounts/password/change/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/password/change/"


def test_password_change_page(client_for, alice, django_assert_num_queries):
    client = client_for(alice)
    # The user, their second factors, whom they blocked, their your-turn email
    # choice, their recorded browsers (none: force_login records none;
    # tests/accounts/test_usersessions.py).
    with django_assert_num_queries(5):
        response = client.get("/accounts/password/change/")
    assert response.status_code == 200
    assert '<a href="/accounts/password/change/">Account</a>' in response.text
    assert 'aria-current="page">Change password</a>' in response.text
    assert '<h2 id="blocked-heading">People you blocked</h2>' in response.text


def test_the_account_page_lists_whom_you_blocked(client_for, alice, bob):
    services.block_player(blocker=alice, blocked=bob)
    response = client_for(alice).get("/accounts/password/change/")
    assert '<a href="/players/bob/">bob</a>' in response.text
    assert '<button type="submit" class="button small">Unblock bob</button>' in (
        response.text
    )


def test_password_change_refuses_a_wrong_current_password(client_for, alice):
    response = change_password(client_for(alice), old="not-it")
    assert response.status_code == 400
    assert WRONG_PASSWORD in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_applies_the_validators(client_for, alice):
    response = change_password(client_for(alice), new="123")
    assert response.status_code == 400
    assert "This password is too short." in response.text
    assert "This password is too common." in response.text
    assert "This password is entirely numeric." in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_keeps_this_session_and_ends_the_others(alice):
    here, elsewhere = login("alice"), login("alice")
    assert logged_in_as(elsewhere) == "alice"
    response = change_password(here)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/change/"
    assert "Password successfully changed." in here.get(response["Location"]).text
    assert logged_in_as(here) == "alice"
    assert logged_in_as(elsewhere) is None
    assert logged_in_as(login("alice", NEW_PASSWORD)) == "alice"
    assert logged_in_as(login("alice", PASSWORD)) is None


# -- password reset ---------------------------------------------------------------


@pytest.fixture
def dora(make_user):
    user = make_user("dora")
    confirmed(user, "dora@example.com")
    return user


def test_reset_page_is_the_same_for_any_address(dora, make_user):
    """A confirmed address gets a link; an unknown or unconfirmed one a mail
    that says no account has it: the same answer, one mail either way."""
    unconfirmed = make_user("erin")
    EmailAddress.objects.create(user=unconfirmed, email="erin@example.com")
    answers = [
        ask_for_reset(a)
        for a in ("DORA@example.com", "nobody@example.com", "erin@example.com")
    ]
    assert {answer.status_code for answer in answers} == {302}
    assert {answer["Location"] for answer in answers} == {
        "/accounts/password/reset/done/"
    }
    assert len({tuple(answer.cookies.keys()) for answer in answers}) == 1
    assert [message.to for message in mail.outbox] == [
        ["dora@example.com"],
        ["nobody@example.com"],
        ["erin@example.com"],
    ]
    assert "/accounts/password/reset/key/" in mail.outbox[0].body
    assert "/accounts/password/reset/key/" not in mail.outbox[1].body
    assert "/accounts/password/reset/key/" not in mail.outbox[2].body


def test_reset_by_email_end_to_end(dora):
    elsewhere = login("dora")
    ask_for_reset("dora@example.com")
    client = Client()
    link = mailed_link(mail.outbox[0])
    form = client.get(link, follow=True)
    assert form.status_code == 200
    assert "Choose a new password" in form.text
    response = client.post(
        form.redirect_chain[-1][0],
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/key/done/"
    assert logged_in_as(elsewhere) is None
    assert logged_in_as(login("dora", NEW_PASSWORD)) == "dora"
    # The link works once.
    again = Client().get(link, follow=True)
    assert again.status_code == 400
    assert LINK_INVALID in again.text


def test_a_reset_link_expires(dora, settings, monkeypatch):
    ask_for_reset("dora@example.com")
    link = mailed_link(mail.outbox[0])
    later = timezone.now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1)
    monkeypatch.setattr(
        "django.contrib.auth.tokens.PasswordResetTokenGenerator._now",
        lambda self: later.replace(tzinfo=None),
    )
    response = Client().get(link, follow=True)
    assert response.status_code == 400
    assert LINK_INVALID in response.text


@pytest.mark.parametrize(
    "link",
    [
        "/accounts/password/reset/key/1-nonsense/",
        "/accounts/password/reset/key/zz-1-2/",
    ],
)
def test_a_mangled_reset_link_is_a_readable_400(dora, link):
    response = Client().get(link)
    assert response.status_code == 400
    assert LINK_INVALID in response.text


def test_reset_requests_for_one_address_are_limited(dora, settings):
    for n in range(settings.PASSWORD_RESET_LIMIT):
        assert (
            ask_for_reset("dora@example.com", address=f"192.0.2.{n}").status_code == 302
        )
    response = ask_for_reset("DORA@example.com", address="192.0.2.99")
    assert response.status_code == 429
    assert REQUESTS_PAUSED in response.text
    assert len(mail.outbox) == settings.PASSWORD_RESET_LIMIT


def test_reset_requests_from_one_client_are_limited(dora, settings):
    for n in range(settings.PASSWORD_RESET_LIMIT):
        assert ask_for_reset(f"user{n}@example.com").status_code == 302
    assert ask_for_reset("dora@example.com").status_code == 429
    assert ask_for_reset("dora@example.com", address="192.0.2.1").status_code == 302


def test_a_malformed_reset_request_is_a_400(db):
    response = ask_for_reset("not an address")
    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert mail.outbox == []
