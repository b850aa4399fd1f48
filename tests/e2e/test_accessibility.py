"""axe-core audit of every kind of page, in the states people see them in, in
the light and the dark colour scheme (prefers-color-scheme).

axe is evaluated through the DevTools protocol, which the page's Content Security
Policy does not govern, so the pages are audited under their real CSP. Violations
of every impact go to artifacts/axe-report-<scheme>.json (the account pages' and
the notify control's beside it: -accounts-, -notify-); serious and critical ones
fail (color-contrast among them).
"""

import json
import re

import pytest
from playwright.sync_api import Page, expect

from games import services
from tests.conftest import PASSWORD, play_cells
from tests.e2e.conftest import BOTH_SCHEMES

BLOCKING = ("serious", "critical")


def audit(page: Page, axe_source: str) -> list[dict]:
    page.evaluate(axe_source)
    violations = page.evaluate("axe.run(document).then(result => result.violations)")
    return [
        {
            "id": violation["id"],
            "impact": violation["impact"],
            "help": violation["help"],
            "targets": [node["target"] for node in violation["nodes"]],
        }
        for violation in violations
    ]


def submit(page: Page, button: str, **fields: str) -> None:
    """Fill the labelled fields, submit, and wait for the answer (an error page)."""
    for label, value in fields.items():
        page.get_by_label(label, exact=True).fill(value)
    with page.expect_response(lambda response: response.request.method == "POST"):
        page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_load_state()


@BOTH_SCHEMES
def test_no_serious_accessibility_violations(
    player, axe_source, artifacts, color_scheme
):
    visitor = player("visitor", account=False)
    alice = player("alice")
    bob = player("bob")
    carol = player("carol")
    in_progress = services.create_game(creator=alice.user, opponent=bob.user)
    play_cells(in_progress, (1, 1), (0, 0))
    won = services.create_game(creator=alice.user, opponent=bob.user)
    play_cells(won, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    forfeited = services.create_game(creator=bob.user, opponent=alice.user)
    services.forfeit(game_id=forfeited.pk, user=bob.user)
    open_game = services.create_game(creator=carol.user, opponent=None)
    # New for alice (carol moved, alice has not): marked in her lobby.
    new_game = services.create_game(creator=carol.user, opponent=alice.user)
    play_cells(new_game, (2, 2))
    aborted = services.create_game(creator=alice.user, opponent=bob.user)
    services.abort(game_id=aborted.pk, user=bob.user)

    report = {}

    def check(name: str, page: Page) -> None:
        report[name] = audit(page, axe_source)

    for path, name in [("/accounts/login/", "login"), ("/accounts/signup/", "signup")]:
        visitor.page.goto(path)
        check(name, visitor.page)
    submit(
        visitor.page,
        "Sign up",
        **{"Username:": "alice", "Password:": "123", "Password (again):": "4"},
    )
    assert visitor.page.locator(".errorlist").count() >= 2
    check("signup with errors", visitor.page)
    visitor.page.goto("/accounts/login/")
    submit(visitor.page, "Log in", **{"Username:": "alice", "Password:": "wrong"})
    assert visitor.page.get_by_role("alert").is_visible()
    check("login with errors", visitor.page)

    alice.page.goto("/")
    assert alice.page.get_by_text("carol started a game against you.").is_visible()
    check("lobby", alice.page)
    # The notify control refused by the browser (it refuses where the context
    # has not granted it; turned on: the next test).
    alice.page.get_by_role("button", name="Notify me when it is my turn").click()
    expect(alice.page.get_by_text("Blocked by the browser")).to_be_visible()
    check("lobby, notifications blocked", alice.page)
    submit(alice.page, "Start game", **{"Opponent's username:": "nobody"})
    assert alice.page.locator("#id_opponent_error").is_visible()
    check("lobby with errors", alice.page)
    alice.open_game(in_progress.pk)
    assert alice.page.get_by_text("Tip: keys 1 to 9 play a cell").is_visible()
    check("game in progress, your turn", alice.page)
    bob.open_game(in_progress.pk)
    check("game in progress, opponent's turn", bob.page)
    carol.open_game(in_progress.pk)
    check("game in progress, spectator", carol.page)
    alice.open_game(won.pk)
    check("game won", alice.page)
    bob.open_game(forfeited.pk)
    check("game forfeited", bob.page)
    alice.open_game(open_game.pk)
    check("open game", alice.page)
    alice.open_game(new_game.pk)
    alice.page.get_by_text("Abort…").click()  # the confirmation opens
    check("game abortable after one move", alice.page)
    alice.open_game(aborted.pk)
    assert alice.page.get_by_text("Aborted by bob.").first.is_visible()
    check("game aborted", alice.page)
    alice.page.goto(f"/games/{won.pk}/?ply=3")
    check("replay", alice.page)
    alice.page.goto("/players/alice/")
    check("player page", alice.page)
    alice.page.goto("/games/archive/?result=won")
    check("archive", alice.page)
    alice.page.goto("/games/archive/?result=nope")
    check("archive with errors", alice.page)
    alice.open_game(99999)
    check("no such game (404)", alice.page)

    (artifacts / f"axe-report-{color_scheme}.json").write_text(
        json.dumps(report, indent=2)
    )
    blocking = {
        page: [v for v in violations if v["impact"] in BLOCKING]
        for page, violations in report.items()
    }
    assert {page: found for page, found in blocking.items() if found} == {}


@BOTH_SCHEMES
@pytest.mark.notifications  # granted: the headless shell cannot
def test_the_notify_control_turned_on_has_no_serious_violations(
    player, axe_source, artifacts, color_scheme
):
    dora = player("dora", permissions=["notifications"])
    dora.page.goto("/")
    dora.page.get_by_role("button", name="Notify me when it is my turn").click()
    expect(dora.page.get_by_text("On", exact=True)).to_be_visible()
    report = {"lobby, notifications on": audit(dora.page, axe_source)}

    (artifacts / f"axe-report-notify-{color_scheme}.json").write_text(
        json.dumps(report, indent=2)
    )
    blocking = [v for v in report["lobby, notifications on"] if v["impact"] in BLOCKING]
    assert blocking == []


def test_the_audit_reports_a_known_violation(browser, axe_source):
    """Proof that the audit above can fail: an unnamed button is "critical"."""
    page = browser.new_page()
    try:
        page.set_content(
            "<!doctype html><html lang='en'><title>t</title>"
            "<main><h1>t</h1><button></button></main></html>"
        )
        violations = audit(page, axe_source)
    finally:
        page.close()
    assert [(v["id"], v["impact"]) for v in violations] == [("button-name", "critical")]


# -- account pages --------------------------------------------------


@BOTH_SCHEMES
def test_account_pages_have_no_serious_accessibility_violations(
    player, axe_source, artifacts, settings, django_user_model, color_scheme
):
    from allauth.account.models import EmailAddress
    from django.core import mail

    dora = django_user_model.objects.create_user(
        username="dora", password="a-long-test-password-42"
    )
    EmailAddress.objects.create(user=dora, email="d@example.com", verified=True)
    visitor = player("visitor", account=False)
    alice = player("alice")
    report = {}

    def check(name: str, page: Page) -> None:
        report[name] = audit(page, axe_source)

    pages = [
        ("/accounts/password/change/", "password change"),
        ("/accounts/email/", "email"),
        ("/accounts/reauthenticate/", "confirm it is you"),
        ("/accounts/close/", "close account"),
    ]
    for path, name in pages:
        alice.page.goto(path)
        check(name, alice.page)
    alice.page.goto("/accounts/password/change/")
    submit(alice.page, "Change password", **{"Current Password:": "x"})
    check("password change with errors", alice.page)
    alice.page.goto("/accounts/reauthenticate/")
    submit(alice.page, "Confirm", **{"Password:": "x"})
    check("confirm it is you with errors", alice.page)
    submit(alice.page, "Confirm", **{"Password:": PASSWORD})
    alice.page.goto("/accounts/email/")
    submit(alice.page, "Add the address", **{"Email:": "nope"})
    check("email with errors", alice.page)
    submit(alice.page, "Add the address", **{"Email:": "alice@example.com"})
    check("email waiting for confirmation", alice.page)
    link = re.search(
        r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail.outbox[0].body
    )
    alice.page.goto(link[1])
    check("confirm the address", alice.page)
    alice.page.goto("/accounts/confirm-email/MQ:nonsense/")
    check("confirmation link not valid", alice.page)
    alice.page.goto("/accounts/close/")
    submit(alice.page, "Close my account", **{"Your current password:": "x"})
    check("close account with errors", alice.page)

    page = visitor.page
    page.goto("/accounts/password/reset/")
    check("password reset", page)
    submit(page, "Send the reset link", **{"Email:": "nope"})
    check("password reset with errors", page)
    submit(page, "Send the reset link", **{"Email:": "d@example.com"})
    check("password reset sent", page)
    link = re.search(
        r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", mail.outbox[-1].body
    )
    page.goto(link[1])
    check("choose a new password", page)
    page.goto("/accounts/password/reset/key/1-nonsense/")
    check("reset link not valid", page)
    page.goto("/accounts/password/reset/key/done/")
    check("password set", page)
    settings.ACCOUNT_RATE_LIMITS = {"reset_password": "1/m/ip"}
    for _ in range(2):
        page.goto("/accounts/password/reset/")
        submit(page, "Send the reset link", **{"Email:": "d@example.com"})
    assert page.get_by_role("heading", name="Too many requests").is_visible()
    check("password reset limited (429)", page)

    report_file = artifacts / f"axe-report-accounts-{color_scheme}.json"
    report_file.write_text(json.dumps(report, indent=2))
    blocking = {
        name: [v for v in violations if v["impact"] in BLOCKING]
        for name, violations in report.items()
    }
    assert {name: found for name, found in blocking.items() if found} == {}
