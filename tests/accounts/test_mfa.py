"""Two-factor authentication (allauth.mfa) through HTTP: setting up and removing
an authenticator app, each change after the password and with a notice mailed
through the worker; logging in with a code, wrong codes counted as failed
logins, a recovery code usable once. Codes come from tests/support/totp.py,
computed from the secret the page shows. The browser tests (passkeys, the
pages): tests/e2e/test_mfa.py; the admin: tests/accounts/test_mfa_admin.py."""

import json
import re

import pytest
from allauth.mfa.models import Authenticator
from django.core import mail
from django.test import Client

from accounts.urls import urlpatterns

from ..conftest import PASSWORD
from ..support.account_client import confirmed, logged_in_as
from ..support.hostile import send
from ..support.readme import routes_table
from ..support.routes import routes
from ..support.totp import hotp, totp, wrong_code

SECRET = re.compile(
    r'<code class="totp-secret" id="totp-secret"[^>]*>([A-Z2-7]+)</code>'
)
INCORRECT = "Incorrect code."
PAUSED = "Too many failed logins for this account or from your network"
QUEUED = {
    "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
    "relay": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
}


def test_the_tests_codes_are_rfc_6238s():
    """RFC 6238 appendix B (SHA-1, eight digits) and RFC 4226 appendix D."""
    key = b"12345678901234567890"
    for at, code in [
        (59, "94287082"),
        (1111111109, "07081804"),
        (1234567890, "89005924"),
        (2000000000, "69279037"),
    ]:
        assert hotp(key, at // 30, digits=8) == code
    assert [hotp(key, counter) for counter in range(3)] == [
        "755224",
        "287082",
        "359152",
    ]
    assert totp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", at=59) == "287082"


def reauthenticate(client: Client, next_path: str) -> None:
    response = client.post(
        "/accounts/reauthenticate/", {"password": PASSWORD, "next": next_path}
    )
    assert response.status_code == 302
    assert response["Location"] == next_path


def set_up_app(client: Client) -> str:
    """The account page's "Set up an authenticator app", the password asked
    first; returns the secret the page showed."""
    path = "/accounts/2fa/totp/activate/"
    asked = client.get(path)
    assert asked.status_code == 302
    assert (
        asked["Location"]
        == "/accounts/reauthenticate/?next=%2Faccounts%2F2fa%2Ftotp%2Factivate%2F"
    )
    reauthenticate(client, path)
    page = client.get(path)
    assert page.status_code == 200
    (secret,) = SECRET.findall(page.text)
    refused = client.post(path, {"code": wrong_code(secret)})
    assert refused.status_code == 400
    assert INCORRECT in refused.text
    done = client.post(path, {"code": totp(secret)})
    assert done.status_code == 302
    assert done["Location"] == "/accounts/2fa/recovery-codes/"
    return secret


def factors(user) -> set[str]:
    return set(Authenticator.objects.filter(user=user).values_list("type", flat=True))


def test_setting_up_and_removing_the_app_mails_notices_through_the_worker(
    settings, client_for, alice, run_tasks
):
    settings.MAILERS = QUEUED
    confirmed(alice, "alice@example.com")
    client = client_for(alice)
    set_up_app(client)
    assert factors(alice) == {"totp", "recovery_codes"}
    assert mail.outbox == []  # queued, not sent by the request
    run_tasks()
    assert [(m.to, m.subject) for m in mail.outbox] == [
        (["alice@example.com"], "[tictactoe] Authenticator App Activated")
    ]
    assert "Authenticator app activated." in mail.outbox[0].body

    page = client.get("/accounts/password/change/")
    assert "Remove the authenticator app" in page.text
    removed = client.post("/accounts/2fa/totp/deactivate/")
    assert removed.status_code == 302
    assert factors(alice) == set()  # the recovery codes go with the last factor
    run_tasks()
    assert [m.subject for m in mail.outbox][1:] == [
        "[tictactoe] Authenticator App Deactivated"
    ]


def test_a_notice_goes_only_to_a_confirmed_address(
    settings, client_for, alice, run_tasks
):
    """Not to the unconfirmed primary address (anybody's), though it comes
    first; to the confirmed one, once the worker has run the queue."""
    from allauth.account.models import EmailAddress

    settings.MAILERS = QUEUED
    EmailAddress.objects.create(
        user=alice, email="maybe@example.com", verified=False, primary=True
    )
    EmailAddress.objects.create(
        user=alice, email="alice@example.com", verified=True, primary=False
    )
    set_up_app(client_for(alice))
    assert factors(alice) == {"totp", "recovery_codes"}
    run_tasks()
    assert [(m.to, m.subject) for m in mail.outbox] == [
        (["alice@example.com"], "[tictactoe] Authenticator App Activated")
    ]


def test_changes_ask_for_the_password_and_a_wrong_one_counts(
    settings, client_for, alice
):
    client = client_for(alice)
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        wrong = client.post("/accounts/reauthenticate/", {"password": "wrong"})
        assert wrong.status_code == 400
    paused = client.post("/accounts/reauthenticate/", {"password": PASSWORD})
    assert paused.status_code == 429
    assert client.get("/accounts/2fa/totp/activate/").status_code == 302
    assert factors(alice) == set()


def password_step(address: str = "198.51.100.1") -> Client:
    """alice's client past the password: the login answers with the second
    step."""
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"login": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/authenticate/"
    assert logged_in_as(client) is None
    return client


@pytest.fixture
def alice_client(client_for, alice) -> Client:
    return client_for(alice)


@pytest.fixture
def alice_with_app(alice_client) -> str:
    """alice set up an authenticator app (in alice_client); its secret."""
    return set_up_app(alice_client)


def test_logging_in_asks_for_a_code(alice_with_app):
    client = password_step()
    page = client.get("/accounts/2fa/authenticate/")
    assert page.status_code == 200
    assert "Code from your authenticator app, or a recovery code" in page.text
    response = client.post(
        "/accounts/2fa/authenticate/", {"code": totp(alice_with_app)}
    )
    assert response.status_code == 302
    assert logged_in_as(client) == "alice"


def test_a_code_is_accepted_once(alice_with_app):
    code = totp(alice_with_app)
    first = password_step()
    first.post("/accounts/2fa/authenticate/", {"code": code})
    assert logged_in_as(first) == "alice"
    second = password_step()
    replayed = second.post("/accounts/2fa/authenticate/", {"code": code})
    assert replayed.status_code == 400
    assert INCORRECT in replayed.text
    assert logged_in_as(second) is None


def test_wrong_codes_count_against_the_login_limit(settings, alice_with_app):
    client = password_step()
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        wrong = client.post(
            "/accounts/2fa/authenticate/", {"code": wrong_code(alice_with_app)}
        )
        assert wrong.status_code == 400
        assert INCORRECT in wrong.text
    paused = client.post("/accounts/2fa/authenticate/", {"code": totp(alice_with_app)})
    assert paused.status_code == 429
    assert PAUSED in paused.text
    assert logged_in_as(client) is None
    # The wrong codes count against the client's address too: its password
    # logins are paused. From another address the account is paused at the code.
    assert (
        Client(REMOTE_ADDR="198.51.100.1")
        .post("/accounts/login/", {"login": "alice", "password": PASSWORD})
        .status_code
        == 429
    )
    again = password_step("203.0.113.9")
    still = again.post("/accounts/2fa/authenticate/", {"code": totp(alice_with_app)})
    assert still.status_code == 429
    assert logged_in_as(again) is None


def test_correct_codes_leave_the_address_count_of_failed_logins(
    settings, make_user, client_for
):
    """Password spraying from one address, a login to one of its own accounts
    with an app between guesses: allauth's clearing after a correct code
    deleted the address's count, so no guess was ever paused (seen: 17 wrong
    passwords answered, limit 5). A correct code neither counts nor clears."""
    address = "203.0.113.66"
    limit = settings.LOGIN_FAILURE_LIMIT
    own = [make_user(f"mallory{n}") for n in range(limit)]
    secrets = [
        set_up_app(client_for(user, REMOTE_ADDR=f"198.51.100.{10 + n}"))
        for n, user in enumerate(own)
    ]
    for n, (user, secret) in enumerate(zip(own, secrets, strict=True)):
        client = Client(REMOTE_ADDR=address)
        step = client.post(
            "/accounts/login/", {"login": user.username, "password": PASSWORD}
        )
        assert step["Location"] == "/accounts/2fa/authenticate/", n
        client.post("/accounts/2fa/authenticate/", {"code": totp(secret)})
        assert logged_in_as(client) == user.username, n
        guess = Client(REMOTE_ADDR=address).post(
            "/accounts/login/", {"login": f"victim{n}", "password": "wrong"}
        )
        assert guess.status_code == 400, n
    paused = Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"login": "victim9", "password": "wrong"}
    )
    assert paused.status_code == 429
    assert PAUSED in paused.text


def test_a_recovery_code_works_once(alice_client, alice_with_app):
    codes = alice_client.get("/accounts/2fa/recovery-codes/")
    unused = re.findall(r"<li><code>(\d{8})</code></li>", codes.text)
    assert len(unused) == 10
    client = password_step()
    client.post("/accounts/2fa/authenticate/", {"code": unused[3]})
    assert logged_in_as(client) == "alice"
    again = password_step()
    used = again.post("/accounts/2fa/authenticate/", {"code": unused[3]})
    assert used.status_code == 400
    assert INCORRECT in used.text
    assert logged_in_as(again) is None
    left = alice_client.get("/accounts/2fa/recovery-codes/")
    assert "9 of 10 unused" in left.text
    assert unused[3] not in left.text


def test_the_account_page_shows_the_second_factors(
    client_for, alice, django_assert_num_queries
):
    client = client_for(alice)
    page = client.get("/accounts/password/change/")
    assert page.status_code == 200
    assert "Two-factor authentication" in page.text
    assert (
        'href="/accounts/2fa/totp/activate/">Set up an authenticator app' in page.text
    )
    assert 'href="/accounts/2fa/webauthn/add/">Add a passkey' in page.text


def documented_routes() -> list[str]:
    """The first cell of each row of docs/routes.md's table."""
    return [row[0] for row in routes_table()]


def test_every_two_factor_route_is_in_the_routes_page():
    """As docs/routes.md writes a route: whole (`/accounts/2fa/`), or after the row's
    first route (`/accounts/2fa/webauthn/` (+ `add/`))."""
    rows = documented_routes()
    mfa_routes = [w for w, p in routes(urlpatterns) if p.name.startswith("mfa_")]
    assert len(mfa_routes) == 12
    for written in mfa_routes:
        path = "/accounts/" + written.replace("<int:pk>", "<id>")
        written = [f"`{path}`"] + [
            (f"`{path[:cut]}`", f"`{path[cut:]}`")
            for cut in range(len(path))
            if path[cut - 1] == "/"
        ]
        assert any(
            (form in row)
            if isinstance(form, str)
            else all(part in row for part in form)
            for row in rows
            for form in written
        ), f"{path} is not in docs/routes.md"


@pytest.mark.parametrize(
    "credential",
    ["", "{}", '{"id": "x", "type": "public-key"}', "not json", "[1, 2]"],
)
def test_a_passkey_that_is_not_one_adds_nothing(alice_client, alice, credential):
    path = "/accounts/2fa/webauthn/add/"
    reauthenticate(alice_client, path)
    assert alice_client.get(path).status_code == 200  # the challenge is made
    response = alice_client.post(path, {"name": "Mine", "credential": credential})
    assert response.status_code == 400
    assert "No passkey was added: press Add and follow your browser" in response.text
    assert factors(alice) == set()


HOSTILE_CREDENTIALS = [
    '{"id": "x"}',
    '{"id": "x", "rawId": "x", "response": {}}',
    '{"id": 5, "rawId": null, "type": 3, "response": {"clientDataJSON": 1}}',
    '{"response": {"userHandle": 5}}',
    json.dumps(
        {
            "id": "AA",
            "rawId": "AA",
            "type": "public-key",
            "response": {"clientDataJSON": "AA", "attestationObject": "AA"},
        }
    ),
    json.dumps(
        {
            "id": "AA",
            "rawId": "AA",
            "type": "public-key",
            "response": {
                "clientDataJSON": "AA",
                "authenticatorData": "AA",
                "signature": "AA",
                "userHandle": "MQ",
            },
        }
    ),
    "[]",
    "null",
]


@pytest.mark.parametrize("credential", HOSTILE_CREDENTIALS)
def test_a_malformed_passkey_answer_is_refused_not_a_500(
    alice_client, alice, credential
):
    """Regression: allauth let fido2's KeyError and ValueError escape (a 500)
    for these; accounts.mfa_forms makes each the form's refusal."""
    add = "/accounts/2fa/webauthn/add/"
    reauthenticate(alice_client, add)
    alice_client.get(add)  # the challenge
    added = send(alice_client, "POST", add, {"name": "x", "credential": credential})
    assert added.status_code == 400
    assert "No passkey was added" in added.text

    passkey = Client()
    passkey.get("/accounts/2fa/webauthn/login/", HTTP_ACCEPT="application/json")
    login = send(
        passkey, "POST", "/accounts/2fa/webauthn/login/", {"credential": credential}
    )
    assert login.status_code == 302
    assert login["Location"] == "/accounts/login/"
    assert logged_in_as(passkey) is None

    Authenticator.objects.create(user=alice, type="totp", data={"secret": "A" * 32})
    second = password_step()
    second.get("/accounts/2fa/authenticate/")
    step = send(
        second, "POST", "/accounts/2fa/authenticate/", {"credential": credential}
    )
    assert step.status_code == 200
    assert "That passkey or security key is not one of yours" in step.text
    assert logged_in_as(second) is None
    assert factors(alice) == {"totp"}


def test_an_account_with_a_second_factor_still_changes_its_address(
    alice_client, alice, alice_with_app
):
    """allauth's default (MFA_ALLOW_UNVERIFIED_EMAIL off) refuses a new address
    to an account with a second factor; here an address is used only once
    confirmed, so the email page works as for everyone."""
    confirmed(alice, "alice@example.com")
    reauthenticate(alice_client, "/accounts/email/")
    response = alice_client.post(
        "/accounts/email/", {"email": "new@example.com", "action_add": ""}
    )
    assert response.status_code == 302
    assert set(alice.emailaddress_set.values_list("email", "verified")) == {
        ("alice@example.com", True),
        ("new@example.com", False),
    }
