"""The account limits through HTTP: failed logins per username and per network
(IPv6 per /64) pause logging in, shared by every process through the database;
wrong current passwords count as failed logins; confirmation mails per address
and per client. Reset requests: test_accounts_passwords.py; simultaneous
requests against the served app: test_accounts_served.py.
"""

from datetime import timedelta

from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts.models import RateLimitCount

from .conftest import PASSWORD
from .support.account_client import (
    NEW_PASSWORD,
    logged_in_as,
    login,
    outbox_to,
    signup,
)

PAUSED = "Too many failed logins for this account or from your network"


# -- limits -----------------------------------------------------------------------


def fail_login(username: str, address: str):
    return Client().post(
        "/accounts/login/",
        {"login": username, "password": "wrong"},
        REMOTE_ADDR=address,
    )


def test_failed_logins_for_one_username_pause_its_logins(settings, make_user):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        assert fail_login("alice", f"192.0.2.{n}").status_code == 400
    response = fail_login("ALICE", "192.0.2.100")
    assert response.status_code == 429
    assert PAUSED in response.text
    assert f"paused for {settings.LOGIN_COOLOFF_MINUTES} minutes" in response.text
    # The right password too, from anywhere; other accounts are not affected.
    assert logged_in_as(login("alice", address="192.0.2.101")) is None
    make_user("bob")
    assert logged_in_as(login("bob", address="192.0.2.102")) == "bob"


def test_failed_logins_from_one_network_pause_its_logins(settings, make_user):
    """Per client address, IPv6 counted per /64: the addresses of one /64 are
    one client; the next /64 is another."""
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        assert fail_login(f"user{n}", f"2001:db8:0:1::{n + 1}").status_code == 400
    assert fail_login("alice", "2001:db8:0:1:ffff::9").status_code == 429
    assert logged_in_as(login("alice", address="2001:db8:0:1::77")) is None
    assert logged_in_as(login("alice", address="2001:db8:0:2::1")) == "alice"


def test_a_success_does_not_clear_the_count(settings, make_user):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT - 1):
        fail_login("alice", f"192.0.2.{n}")
    assert logged_in_as(login("alice", address="192.0.2.50")) == "alice"
    fail_login("alice", "192.0.2.51")
    assert fail_login("alice", "192.0.2.52").status_code == 429


def test_the_pause_ends_after_the_cooloff(settings, make_user, monkeypatch):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail_login("alice", f"192.0.2.{n}")
    assert logged_in_as(login("alice", address="192.0.2.60")) is None
    later = timezone.now() + timedelta(
        minutes=settings.LOGIN_COOLOFF_MINUTES, seconds=1
    )
    monkeypatch.setattr("time.time", lambda: later.timestamp())
    assert logged_in_as(login("alice", address="192.0.2.61")) == "alice"


def test_the_counts_are_shared_through_the_database(settings, make_user):
    """Every server process and host reads the same counts: they are rows of
    their own table, not process memory; one per username and per client
    address (allauth's lock rows are gone once the count is taken)."""
    make_user("alice")
    fail_login("alice", "192.0.2.1")
    assert RateLimitCount.objects.count() == 3  # and allauth's 30 logins a minute


def test_confirmation_mails_for_one_address_are_limited(settings, db):
    """Past the limit, sign-ups with the address still go ahead and answer the
    same; no more mail goes to it (the links already sent still work)."""
    for n in range(settings.PASSWORD_RESET_LIMIT + 2):
        response = signup(f"user{n}", "dora@example.com", REMOTE_ADDR=f"192.0.2.{n}")
        assert response.status_code == 302
    assert len(outbox_to("dora@example.com")) == settings.PASSWORD_RESET_LIMIT


def test_confirmation_mails_from_one_client_are_limited(settings, db):
    for n in range(settings.PASSWORD_RESET_LIMIT + 2):
        assert signup(f"user{n}", f"user{n}@example.com").status_code == 302
    assert len(mail.outbox) == settings.PASSWORD_RESET_LIMIT


def test_wrong_current_passwords_count_as_failed_logins(settings, client_for, alice):
    """A stolen session cannot guess the password without limit: the checks of
    the password change, re-authentication and closing count like logins."""
    client = client_for(alice)
    checks = [
        (
            "/accounts/password/change/",
            {"oldpassword": "x", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        ),
        ("/accounts/reauthenticate/", {"password": "x"}),
        ("/accounts/close/", {"password": "x"}),
    ]
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        path, data = checks[n % len(checks)]
        response = client.post(path, data, REMOTE_ADDR=f"192.0.2.{n}")
        assert response.status_code == 400, path
    response = client.post("/accounts/close/", {"password": PASSWORD})
    assert response.status_code == 429
    assert PAUSED in response.text
    alice.refresh_from_db()
    assert alice.is_active
    assert logged_in_as(login("alice", address="192.0.2.200")) is None
