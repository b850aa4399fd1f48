"""Links in mail start with DJANGO_SITE_URL, whatever Host header the request
that caused the mail carried: a Host the site accepts (DJANGO_ALLOWED_HOSTS,
its wildcards and ports) must never end up in a mail."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client

from ..conftest import PASSWORD
from ..support.account_client import confirmed

SITE_URL = "https://ttt.example.com"
ALLOWED = [".example.org", "evil.example", "ttt.example.com", "testserver"]
HOSTILE_HOSTS = [
    "evil.example",
    "attacker.example.org",
    "evil.example:8443",
    "ttt.example.com.example.org",
]
URL = re.compile(r"https?://[^\s/]+")


@pytest.fixture(autouse=True)
def the_site(settings):
    settings.SITE_URL = SITE_URL
    settings.ALLOWED_HOSTS = ALLOWED


def assert_only_the_site(message, host: str) -> None:
    """Every link of `message` is on the site; the Host appears nowhere."""
    texts = [message.subject, message.body] + [
        content for content, _ in getattr(message, "alternatives", [])
    ]
    for text in texts:
        assert host.split(":")[0] not in text
        assert set(URL.findall(text)) <= {SITE_URL}


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
def test_a_reset_link(make_user, host):
    dora = make_user("dora")
    confirmed(dora, "dora@example.com")
    response = Client().post(
        "/accounts/password/reset/", {"email": "dora@example.com"}, HTTP_HOST=host
    )
    assert response.status_code == 302
    (message,) = mail.outbox
    assert f"{SITE_URL}/accounts/password/reset/key/" in message.body
    assert_only_the_site(message, host)


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
def test_a_confirmation_link_at_sign_up(db, host):
    response = Client().post(
        "/accounts/signup/",
        {
            "username": "erin",
            "email": "erin@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
        HTTP_HOST=host,
    )
    assert response.status_code == 302
    (message,) = mail.outbox
    assert f"{SITE_URL}/accounts/confirm-email/" in message.body
    assert_only_the_site(message, host)


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
def test_a_confirmation_link_for_a_new_address(client_for, alice, host):
    client = client_for(alice)
    assert (
        client.post(
            "/accounts/reauthenticate/", {"password": PASSWORD}, HTTP_HOST=host
        ).status_code
        == 302
    )
    response = client.post(
        "/accounts/email/",
        {"email": "alice@example.com", "action_add": ""},
        HTTP_HOST=host,
    )
    assert response.status_code == 302
    (message,) = mail.outbox
    assert f"{SITE_URL}/accounts/confirm-email/" in message.body
    assert_only_the_site(message, host)


def test_the_mails_without_a_secret_link_too(make_user):
    """A reset asked for an unknown address, a sign-up with an address another
    account confirmed: their links (sign up, ask for a reset) are the site's."""
    host = "evil.example"
    bob = make_user("bob")
    confirmed(bob, "bob@example.com")
    Client().post(
        "/accounts/password/reset/", {"email": "nobody@example.com"}, HTTP_HOST=host
    )
    Client().post(
        "/accounts/signup/",
        {
            "username": "mallory",
            "email": "bob@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
        HTTP_HOST=host,
    )
    unknown, in_use = mail.outbox
    assert unknown.to == ["nobody@example.com"]
    assert f"{SITE_URL}/accounts/signup/" in unknown.body
    assert in_use.to == ["bob@example.com"]
    assert f"{SITE_URL}/accounts/password/reset/" in in_use.body
    assert not EmailAddress.objects.filter(user__username="mallory", verified=True)
    for message in (unknown, in_use):
        assert_only_the_site(message, host)
