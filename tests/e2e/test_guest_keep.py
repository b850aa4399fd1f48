"""A guest in a browser: the header offers Keep this account, Log out warns
first, and the account kept through the form logs in later with its password.
axe audits the guest's pages."""

import json

from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from tests.e2e.test_accessibility import BLOCKING, audit, submit

NEW_PASSWORD = "a-kept-guest-password-31"


def test_a_guest_keeps_the_account_and_logs_in_with_it(
    player, make_guest, server_url, axe_source, artifacts
):
    dora = player("dora", account=False)
    page = dora.page
    client = Client()
    client.force_login(make_guest("dora"))
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies(
        [{"name": cookie.key, "value": cookie.value, "url": server_url}]
    )
    report = {}

    page.goto("/")
    page.get_by_role("button", name="Log out").click()
    expect(
        page.get_by_role("heading", name="Log out of a guest account?")
    ).to_be_visible()
    report["logout warning"] = audit(page, axe_source)
    page.locator("#main").get_by_role("link", name="Keep this account").click()
    expect(page.get_by_role("heading", name="Keep this account")).to_be_visible()
    report["keep this account"] = audit(page, axe_source)
    submit(page, "Keep this account", **{"Password:": "short"})
    report["keep this account with errors"] = audit(page, axe_source)

    page.get_by_label("Username:").fill("Dorothea")
    page.get_by_label("Password:", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("Password (again):").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Keep this account").click()
    expect(page.get_by_text("The account “Dorothea” is yours")).to_be_visible()
    expect(page.locator(".whoami")).to_have_text("Signed in as Dorothea")

    page.get_by_role("button", name="Log out").click()  # no warning now
    expect(page.get_by_role("link", name="Log in")).to_be_visible()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("dorothea")
    page.get_by_label("Password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".whoami")).to_have_text("Signed in as Dorothea")

    (artifacts / "axe-report-guest.json").write_text(json.dumps(report, indent=2))
    blocking = {
        name: [v for v in violations if v["impact"] in BLOCKING]
        for name, violations in report.items()
    }
    assert {name: found for name, found in blocking.items() if found} == {}
