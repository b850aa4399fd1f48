"""The account limits through HTTP: failed logins per username and per network
(IPv6 per /64) pause logging in, shared by every process through the database;
wrong current passwords count as failed logins; confirmation mails per address
and per client. Reset requests: test_accounts_passwords.py; simultaneous
requests against the served app: test_accounts_served.py.
"""

from datetime import timedelta

import pytest
from allauth.account import app_settings
from allauth.mfa import app_settings as mfa_settings
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts import refusals
from accounts.models import RateLimitCount

from ..conftest import PASSWORD
from ..support.account_client import (
    NEW_PASSWORD,
    confirmed,
    logged_in_as,
    login,
    mailed_link,
    outbox_to,
    signup,
)
from ..support.readme import limits_table

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


def test_failed_logins_count_per_account_whatever_the_host_header(settings, make_user):
    """allauth keyed the count by the Host header and the login: each spelling
    of the host got five fresh guesses at the same account (seen: five more
    accepted under each new spelling)."""
    settings.ALLOWED_HOSTS = ["localhost"]
    make_user("alice")
    hosts = ["localhost", "LOCALHOST", "localhost:1", "localhost:2", "LocalHost:80"]
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        response = Client().post(
            "/accounts/login/",
            {"login": "alice", "password": "wrong"},
            REMOTE_ADDR=f"192.0.2.{n}",
            HTTP_HOST=hosts[0],
        )
        assert response.status_code == 400
    for n, host in enumerate(hosts):
        response = Client().post(
            "/accounts/login/",
            {"login": "Alice", "password": "wrong"},
            REMOTE_ADDR=f"192.0.2.{50 + n}",
            HTTP_HOST=host,
        )
        assert response.status_code == 429, host
        client = Client(HTTP_HOST=host)
        response = client.post(
            "/accounts/login/",
            {"login": "alice", "password": PASSWORD},
            REMOTE_ADDR=f"192.0.2.{100 + n}",
        )
        assert response.status_code == 429, host
        assert "_auth_user_id" not in client.session


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


def test_a_reset_clears_the_accounts_count_not_the_addresss(settings, make_user):
    """allauth's clearing after a reset deleted the count of the client address
    that set the new password (and only the count of a login by email, which
    this site has none of): the account stayed paused, the address guessed on."""
    address = "192.0.2.77"
    confirmed(make_user("alice"), "alice@example.com")
    make_user("bob")
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        assert fail_login("alice", address).status_code == 400
    client = Client(REMOTE_ADDR=address)
    client.post("/accounts/password/reset/", {"email": "alice@example.com"})
    form = client.get(mailed_link(mail.outbox[0]), follow=True)
    done = client.post(
        form.redirect_chain[-1][0],
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert done["Location"] == "/accounts/password/reset/key/done/"
    assert logged_in_as(login("alice", NEW_PASSWORD, address="192.0.2.78")) == "alice"
    assert fail_login("bob", address).status_code == 429
    assert logged_in_as(login("bob", address=address)) is None


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


# -- every 429 says its real wait, and docs/limits.md lists every limit -------------


def test_password_changes_answer_429_with_a_one_minute_wait(client_for, alice):
    """allauth's 5 a minute per user: the page said "paused for 15 minutes"."""
    client = client_for(alice)
    mismatched = {"oldpassword": PASSWORD, "password1": "a", "password2": "b"}
    for _ in range(5):
        assert client.post("/accounts/password/change/", mismatched).status_code == 400
    response = client.post("/accounts/password/change/", mismatched)
    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert (
        "Too many password changes. Please wait 1 minute and try again."
        in response.text
    )
    assert "15 minutes" not in response.text


def test_reauthentication_answers_429_with_a_one_minute_wait(client_for, alice):
    client = client_for(alice)
    for _ in range(10):
        response = client.post("/accounts/reauthenticate/", {"password": PASSWORD})
        assert response.status_code == 302
    response = client.post("/accounts/reauthenticate/", {"password": PASSWORD})
    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert (
        "Too many password confirmations. Please wait 1 minute and try again."
        in response.text
    )


def test_the_email_page_answers_429_with_a_one_minute_wait(client_for, alice):
    client = client_for(alice)
    for _ in range(10):
        client.post("/accounts/email/", {"action_add": "", "email": "not an address"})
    response = client.post(
        "/accounts/email/", {"action_add": "", "email": "not an address"}
    )
    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert (
        "Too many changes to your email addresses. Please wait 1 minute and try "
        "again." in response.text
    )


@pytest.mark.django_db
def test_passkey_logins_answer_429_with_a_one_minute_wait():
    """allauth.mfa's 10 a minute per address: the page said "paused for 15
    minutes"."""
    client = Client()
    for _ in range(10):
        response = client.post("/accounts/2fa/webauthn/login/", {"credential": "{}"})
        assert response.status_code == 302  # back to the login page, refused
    response = client.post("/accounts/2fa/webauthn/login/", {"credential": "{}"})
    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert (
        "Too many passkey logins from your network. Please wait 1 minute and try "
        "again." in response.text
    )


def test_reset_requests_answer_429_with_the_cooloff(settings, make_user):
    for n in range(settings.PASSWORD_RESET_LIMIT):
        response = Client().post(
            "/accounts/password/reset/", {"email": f"x{n}@example.com"}
        )
        assert response.status_code == 302
    response = Client().post("/accounts/password/reset/", {"email": "y@example.com"})
    assert response.status_code == 429
    assert response["Retry-After"] == "900"
    assert "Please wait 15 minutes and try again." in response.text


# allauth's limits this site can reach: the rates configured (allauth's defaults
# and settings.py), and what docs/limits.md's table says of each.
ALLAUTH_LIMITS = {
    "login_failed": ("5/15m/ip,5/15m/key", "5 in 15 minutes", "15 minutes"),
    "login": ("30/m/ip", "30 a minute", "1 minute"),
    "signup": ("20/m/ip", "20 a minute", "1 minute"),
    "reauthenticate": ("10/m/user", "10 a minute", "1 minute"),
    "manage_email": ("10/m/user", "10 a minute", "1 minute"),
    "change_password": ("5/m/user", "5 a minute", "1 minute"),
    "reset_password": ("5/15m/ip,5/15m/key", "5 in 15 minutes", "15 minutes"),
    "reset_password_from_key": ("20/m/ip", "20 a minute", "1 minute"),
    "confirm_email": ("5/15m/ip,5/15m/key", "5 in 15 minutes", "no 429"),
}
# allauth.mfa's limit: passkey logins (a wrong code at the second step is a
# failed login, above).
MFA_LIMITS = {"webauthn_login": ("10/m/ip", "10 a minute", "1 minute")}
# allauth's limits of features this site does not use (codes, phones).
UNREACHABLE = {"change_phone", "request_login_code", "verify_phone"}


def documented_limit(what: str) -> list[str]:
    """The row of docs/limits.md's table whose first cell ends with `what`."""
    (row,) = [row for row in limits_table() if row[0].endswith(what)]
    return row


def test_the_limits_page_lists_every_limit_with_its_number():
    configured = {
        action: rate for action, rate in app_settings.RATE_LIMITS.items() if rate
    }
    assert set(configured) == set(ALLAUTH_LIMITS) | UNREACHABLE
    assert {action for action, _ in refusals.ACTIONS.values()} <= set(ALLAUTH_LIMITS)
    assert {action for action, _ in refusals.MFA_ACTIONS.values()} == set(MFA_LIMITS)
    configured |= mfa_settings.RATE_LIMITS
    for action, (rate, at_most, wait) in (ALLAUTH_LIMITS | MFA_LIMITS).items():
        assert configured[action] == rate, action
        _, _, stated_most, stated_wait = documented_limit(f"(`{action}`)")
        assert stated_most.startswith(at_most), action
        assert stated_wait.startswith(wait), action
    _, _, stated_most, _ = documented_limit("games created or aborted")
    assert stated_most == "30 in 10 minutes (`GAMES_CREATE_ABORT_LIMIT`)"
