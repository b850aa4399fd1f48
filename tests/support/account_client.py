"""Helpers for the account tests: sign up, log in, whose session a client has,
the links mailed, the stored and confirmed addresses."""

import re

from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client

from ..conftest import PASSWORD

LINK = re.compile(r"https?://testserver(/accounts/[^\s]+/)")
NEW_PASSWORD = "another-long-password-77"
WRONG_PASSWORD = "That is not your current password."


def logged_in_as(client) -> str | None:
    """Whose session this is, as the next request sees it."""
    response = client.get("/")
    if response.status_code != 200:
        return None
    return re.search(r"Signed in as <strong>([^<]+)</strong>", response.text)[1]


def login(username: str, password: str = PASSWORD, address="198.51.100.1") -> Client:
    client = Client()
    client.post(
        "/accounts/login/",
        {"login": username, "password": password},
        REMOTE_ADDR=address,
    )
    return client


def signup(username: str, email: str | None = None, client=None, **extra):
    data = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    if email is not None:
        data["email"] = email
    return (client or Client()).post("/accounts/signup/", data, **extra)


def mailed_link(message) -> str:
    """The site path of the one link in `message`."""
    (path,) = LINK.findall(message.body)
    return path


def outbox_to(address: str) -> list:
    return [message for message in mail.outbox if message.to == [address]]


def confirmed(user, email: str) -> EmailAddress:
    return EmailAddress.objects.create(
        user=user, email=email, verified=True, primary=True
    )


def addresses() -> set[tuple[str, str, bool]]:
    return set(EmailAddress.objects.values_list("user__username", "email", "verified"))


LINK_INVALID = "This password-reset link has expired, has already been used"


def ask_for_reset(email: str, address="198.51.100.7", client=None):
    return (client or Client()).post(
        "/accounts/password/reset/", {"email": email}, REMOTE_ADDR=address
    )
