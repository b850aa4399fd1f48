"""Two-factor authentication and passkeys in Chromium: an authenticator app set
up from the account page with the keyboard on a 390 px phone, its codes computed
here from the secret the page shows (tests/support/totp.py); recovery codes;
wrong codes paused by the login limit; passkeys on Chromium's virtual
authenticator (DevTools protocol), as the second step and alone. Every page is
audited with axe under its real Content-Security-Policy, whose refusals would
stop allauth's WebAuthn scripts (the test listens for them)."""

import re

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.core import mail
from playwright.sync_api import Page, expect

from tests.support.totp import totp, wrong_code

from .conftest import BOTH_SCHEMES
from .test_accessibility import BLOCKING, audit
from .test_accounts import fits_the_screen
from .test_keyboard_and_phone import PHONE, tab_to

PAUSED = "Too many failed logins for this account or from your network"


@pytest.fixture(autouse=True)
def site_url(settings, server_url):
    """Passkeys belong to the host name of DJANGO_SITE_URL: the live server's."""
    settings.SITE_URL = server_url


def serious_violations(page: Page, axe_source: str) -> list[dict]:
    return [v for v in audit(page, axe_source) if v["impact"] in BLOCKING]


def csp_refusals(page: Page) -> list[str]:
    """Collects every Content-Security-Policy refusal the page reports."""
    refusals: list[str] = []
    page.on(
        "console",
        lambda message: (
            refusals.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    return refusals


def confirm_password(page: Page, password: str) -> None:
    expect(page.get_by_role("heading", name="Confirm it is you")).to_be_visible()
    page.get_by_label("Password").fill(password)
    page.get_by_label("Password").press("Enter")


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def log_in_with_password(page: Page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password:", exact=True).fill(password)
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.get_by_role("heading", name="Log in: second step")).to_be_visible()


def enter_code(page: Page, code: str) -> None:
    field = page.get_by_label("Code from your authenticator app, or a recovery code")
    field.fill(code)
    field.press("Enter")
    page.wait_for_load_state()


@BOTH_SCHEMES
def test_authenticator_app_with_the_keyboard_on_a_phone(player, axe_source):
    alice = player("alice", **PHONE)
    EmailAddress.objects.create(
        user=alice.user, email="alice@example.com", verified=True, primary=True
    )
    page = alice.page
    refusals = csp_refusals(page)
    page.goto("/accounts/password/change/")
    section = page.get_by_role("region", name="Two-factor authentication")
    expect(section).to_contain_text("Off.")
    assert serious_violations(page, axe_source) == []
    tab_to(page, "a[href='/accounts/2fa/totp/activate/']")
    page.keyboard.press("Enter")
    confirm_password(page, alice.password)

    expect(
        page.get_by_role("heading", name="Set up an authenticator app")
    ).to_be_visible()
    assert fits_the_screen(page)
    assert serious_violations(page, axe_source) == []
    secret = page.locator("#totp-secret").inner_text()
    assert re.fullmatch(r"[A-Z2-7]{32}", secret)
    code_field = page.get_by_label("Code from the app")
    code_field.fill(wrong_code(secret))
    code_field.press("Enter")
    expect(page.get_by_text("Incorrect code.")).to_be_visible()
    assert serious_violations(page, axe_source) == []
    page.get_by_label("Code from the app").fill(totp(secret))
    page.get_by_label("Code from the app").press("Enter")

    expect(page.get_by_role("heading", name="Recovery codes")).to_be_visible()
    assert fits_the_screen(page)
    assert serious_violations(page, axe_source) == []
    codes = page.locator(".recovery-codes code").all_inner_texts()
    assert len(codes) == 10
    assert [m.subject for m in mail.outbox] == [
        "[tictactoe] Authenticator App Activated"
    ]
    page.get_by_role("link", name="Two-factor").click()
    expect(page.get_by_role("heading", name="Authenticator app")).to_be_visible()
    expect(page.locator("#main")).to_contain_text("10 unused")
    assert fits_the_screen(page)
    assert serious_violations(page, axe_source) == []

    # Logging in now takes the password, then a code.
    log_out(page)
    log_in_with_password(page, "alice", alice.password)
    assert fits_the_screen(page)
    assert serious_violations(page, axe_source) == []
    enter_code(page, wrong_code(secret))
    expect(page.get_by_role("alert")).to_have_text("Incorrect code.")
    assert serious_violations(page, axe_source) == []
    enter_code(page, totp(secret))
    expect(page.locator(".whoami")).to_have_text("Signed in as alice")

    # A recovery code works once.
    log_out(page)
    log_in_with_password(page, "alice", alice.password)
    enter_code(page, codes[0])
    expect(page.locator(".whoami")).to_have_text("Signed in as alice")
    log_out(page)
    log_in_with_password(page, "alice", alice.password)
    enter_code(page, codes[0])
    expect(page.get_by_role("alert")).to_have_text("Incorrect code.")

    # Wrong codes count against the login limit, and this address's count keeps
    # the wrong codes of earlier logins (one at set-up, one at the first login,
    # the used recovery code): two more, then even the right one waits.
    for _ in range(2):
        enter_code(page, wrong_code(secret))
        expect(page.get_by_role("alert")).to_have_text("Incorrect code.")
    enter_code(page, totp(secret))
    expect(page.get_by_role("alert")).to_contain_text(PAUSED)
    page.goto("/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert refusals == []


def add_virtual_authenticator(page: Page) -> tuple:
    """Chromium's virtual authenticator: a platform passkey provider that
    checks the user (as a fingerprint would) and keeps resident keys."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, added["authenticatorId"]


@BOTH_SCHEMES
def test_passkeys_log_in_alone_and_as_the_second_step(player, axe_source):
    alice = player("alice")
    EmailAddress.objects.create(
        user=alice.user, email="alice@example.com", verified=True, primary=True
    )
    page = alice.page
    refusals = csp_refusals(page)
    cdp, authenticator_id = add_virtual_authenticator(page)

    page.goto("/accounts/password/change/")
    page.get_by_role("link", name="Add a passkey").click()
    confirm_password(page, alice.password)
    expect(
        page.get_by_role("heading", name="Add a passkey or security key")
    ).to_be_visible()
    assert serious_violations(page, axe_source) == []
    page.get_by_label("Name (to tell your keys apart)").fill("Laptop")
    # With the keyboard: Space ticks the box, Enter on the button adds.
    page.get_by_label("A passkey: log in with it alone").press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Recovery codes")).to_be_visible()

    (credential,) = cdp.send(
        "WebAuthn.getCredentials", {"authenticatorId": authenticator_id}
    )["credentials"]
    assert credential["isResidentCredential"] is True
    (key,) = Authenticator.objects.filter(user=alice.user, type="webauthn")
    assert key.wrap().name == "Laptop"
    assert key.wrap().is_passwordless is True
    assert [m.subject for m in mail.outbox] == ["[tictactoe] Security Key Added"]

    page.goto("/accounts/2fa/webauthn/")
    expect(page.locator(".game-list")).to_contain_text("Laptop (passkey)")
    assert serious_violations(page, axe_source) == []

    # The passkey alone: no username, no password.
    log_out(page)
    assert serious_violations(page, axe_source) == []
    page.get_by_role("button", name="Use a passkey", exact=True).press("Enter")
    expect(page.locator(".whoami")).to_have_text("Signed in as alice")

    # After the password, the passkey is the second step.
    log_out(page)
    log_in_with_password(page, "alice", alice.password)
    page.get_by_role("button", name="Use a passkey or security key").click()
    expect(page.locator(".whoami")).to_have_text("Signed in as alice")

    # Removed from the account page: it logs in no more.
    page.goto("/accounts/2fa/webauthn/")
    page.get_by_role("link", name="Remove Laptop").click()
    confirm_password(page, alice.password)
    assert serious_violations(page, axe_source) == []
    page.get_by_role("button", name="Remove it").click()
    expect(page.get_by_role("status")).to_contain_text("removed")
    assert not Authenticator.objects.filter(user=alice.user).exists()
    assert [m.subject for m in mail.outbox][1:] == ["[tictactoe] Security Key Removed"]
    log_out(page)
    page.get_by_role("button", name="Use a passkey", exact=True).click()
    expect(page.get_by_role("status")).to_be_visible()
    expect(page.locator(".whoami")).to_have_count(0)
    assert refusals == []
