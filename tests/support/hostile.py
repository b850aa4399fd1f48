"""Send possibly hostile requests and check the two promises each one must keep:
the server never answers 5xx, and a request it turns down changes nothing stored.

"Turned down" is anything but a redirect after a POST that is not a redirect to a
login page: a 4xx, a re-rendered form (200), a page (GET), or the 302 to the login
page that anonymous visitors get. Every request is counted in TALLY, which the
test session prints at the end (tests/conftest.py, pytest_terminal_summary).
"""

from dataclasses import dataclass

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.test import Client

from ..conftest import snapshot_tables


@dataclass
class Tally:
    sent: int = 0
    server_errors: int = 0
    changes: int = 0

    def summary(self) -> str:
        return (
            f"{self.sent} hostile requests sent: {self.server_errors} answered 5xx, "
            f"{self.changes} turned-down requests changed stored state"
        )


TALLY = Tally()


def stored_state() -> tuple[list, ...]:
    """Games, moves, series and accounts (with their email addresses and second
    factors): what no turned-down request may touch."""
    accounts = list(get_user_model().objects.order_by("pk").values())
    addresses = list(EmailAddress.objects.order_by("pk").values())
    factors = list(Authenticator.objects.order_by("pk").values())
    return (*snapshot_tables(), accounts, addresses, factors)


def is_login_redirect(response) -> bool:
    location = response.get("Location", "")
    return response.status_code == 302 and location.split("?")[0] in (
        "/accounts/login/",
        "/admin/login/",
    )


def may_change(method: str, response) -> bool:
    return (
        method == "POST"
        and response.status_code in (301, 302, 303)
        and not is_login_redirect(response)
    )


def send(
    client: Client,
    method: str,
    path: str,
    data=None,
    *,
    content_type: str | None = None,
    **headers,
):
    """`client` sends one request; fails the test on a 5xx or on a turned-down
    request that changed stored state. Returns the response."""
    before = stored_state()
    TALLY.sent += 1
    try:
        if content_type is not None:
            response = client.generic(
                method, path, data or b"", content_type=content_type, **headers
            )
        elif method == "GET":
            response = client.get(path, data, **headers)
        elif method == "POST":
            response = client.post(path, data or {}, **headers)
        else:
            response = client.generic(method, path, **headers)
    except Exception:
        TALLY.server_errors += 1
        raise
    if response.status_code >= 500:
        TALLY.server_errors += 1
        raise AssertionError(f"{method} {path} answered {response.status_code}")
    if not may_change(method, response) and stored_state() != before:
        TALLY.changes += 1
        raise AssertionError(
            f"{method} {path} was turned down ({response.status_code}) "
            "but changed stored state"
        )
    return response
