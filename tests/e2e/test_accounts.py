"""Account pages in a browser: on a 390 px phone and without JavaScript, as the
issue asks (every form is a plain HTML form)."""

import re

from django.contrib.auth import get_user_model
from django.core import mail
from playwright.sync_api import expect

from games import services
from tests.conftest import PASSWORD

from .test_keyboard_and_phone import PHONE

NEW_PASSWORD = "another-long-password-77"
NO_SCRIPT_PHONE = PHONE | {"java_script_enabled": False}
RESET_LINK = re.compile(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)")
CONFIRM_LINK = re.compile(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)")


def fits_the_screen(page) -> bool:
    """Nothing wider than the viewport: no sideways scrolling at 390 px."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_change_password_from_the_header(player):
    alice = player("alice", **NO_SCRIPT_PHONE)
    elsewhere = player("alice", account=False)
    elsewhere.page.context.add_cookies(alice.page.context.cookies())
    page = alice.page
    page.goto("/")
    page.get_by_role("link", name="Account").click()
    expect(page.get_by_role("heading", name="Change your password")).to_be_visible()
    assert fits_the_screen(page)
    page.get_by_label("Current Password").fill("not-it")
    page.get_by_label("New Password:", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New Password (again)").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("That is not your current password.")).to_be_visible()

    page.get_by_label("Current Password").fill(PASSWORD)
    page.get_by_label("New Password:", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New Password (again)").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("status")).to_have_text("Password successfully changed.")
    page.goto("/")
    expect(page.locator(".whoami")).to_have_text("Signed in as alice")
    # The other browser's session ended.
    elsewhere.page.goto("/")
    expect(elsewhere.page.get_by_role("heading", name="Log in")).to_be_visible()


def test_forgotten_password_reset_by_email(player, django_user_model):
    from allauth.account.models import EmailAddress

    dora = django_user_model.objects.create_user(username="dora", password=PASSWORD)
    EmailAddress.objects.create(user=dora, email="dora@example.com", verified=True)
    visitor = player("dora", account=False, **NO_SCRIPT_PHONE)
    page = visitor.page
    page.goto("/accounts/login/")
    page.get_by_role("link", name="Forgot your password?").click()
    page.get_by_label("Email").fill("dora@example.com")
    page.get_by_role("button", name="Send the reset link").click()
    expect(page.get_by_role("heading", name="Check your email")).to_be_visible()
    assert fits_the_screen(page)

    (message,) = mail.outbox
    link = RESET_LINK.search(message.body)[1]
    page.goto(link)
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    page.get_by_label("New Password:", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New Password (again)").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set the new password").click()
    expect(page.get_by_role("heading", name="Password set")).to_be_visible()

    page.locator("#main").get_by_role("link", name="Log in").click()
    page.get_by_label("Username").fill("dora")
    page.get_by_label("Password:", exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".whoami")).to_have_text("Signed in as dora")

    page.goto(link)  # the link worked once
    expect(page.get_by_role("heading", name="Reset link not valid")).to_be_visible()


def test_add_and_confirm_an_email_address(player):
    alice = player("alice", **NO_SCRIPT_PHONE)
    page = alice.page
    page.goto("/accounts/password/change/")
    page.get_by_role("link", name="Email address").click()
    page.get_by_label("Email").fill("alice@example.com")
    page.get_by_role("button", name="Add the address").click()
    # It asks for the password first, then goes on with the change.
    expect(page.get_by_role("heading", name="Confirm it is you")).to_be_visible()
    assert fits_the_screen(page)
    page.get_by_label("Password:", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    expect(
        page.get_by_text("Waiting for confirmation: alice@example.com.")
    ).to_be_visible()
    assert fits_the_screen(page)

    (message,) = mail.outbox
    page.goto(CONFIRM_LINK.search(message.body)[1])
    page.get_by_role("button", name="Confirm").click()
    page.goto("/accounts/email/")
    expect(page.locator("#main")).to_contain_text(
        "Your account's address is alice@example.com (confirmed)"
    )
    alice.user.refresh_from_db()
    assert alice.user.email == "alice@example.com"


def test_close_the_account(player):
    alice = player("alice", **NO_SCRIPT_PHONE)
    bob = player("bob")
    game = services.create_game(creator=alice.user, opponent=bob.user)
    page = alice.page
    page.goto("/accounts/password/change/")
    page.get_by_role("link", name="Close account").click()
    expect(page.get_by_role("heading", name="Close your account")).to_be_visible()
    assert fits_the_screen(page)
    page.get_by_label("Your current password").fill(PASSWORD)
    page.get_by_role("button", name="Close my account").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(
        "The account “alice” is closed. Thank you for playing."
    )
    assert not get_user_model().objects.get(username="alice").is_active

    bob.open_game(game.pk)
    expect(bob.page.get_by_role("heading", level=1)).to_contain_text("Game")
    expect(bob.page.get_by_text("alice (closed)").first).to_be_visible()
    # No move was played: the game is aborted (the abort rules), not forfeited.
    expect(bob.turn).to_contain_text("Aborted by alice (closed).")
