"""An invitation link from one browser to another: the creator copies it, a
visitor who is not logged in opens it, logs in, comes back to it and joins."""

import re

from playwright.sync_api import expect

from games import services
from games.models import Game, GameStatus
from tests.e2e.conftest import BOTH_SCHEMES
from tests.e2e.test_accessibility import BLOCKING, audit

INVITATION_URL = re.compile(r"/invitations/(\d+)/([\w-]{43})/$")


def test_invite_by_link_log_in_and_join(player, artifacts):
    alice = player(
        "alice",
        viewport={"width": 900, "height": 720},
        permissions=["clipboard-read", "clipboard-write"],
    )
    bob = player("bob", logged_in=False, viewport={"width": 900, "height": 300})

    page = alice.page
    page.goto("/")
    page.get_by_label("Invite by link").check()
    page.get_by_role("button", name="Start game").click()
    page.wait_for_url(re.compile(r"/games/\d+/$"))
    game_id = alice.game_id
    link = page.get_by_label(re.compile("^Invitation link"))
    url = link.input_value()
    assert INVITATION_URL.search(url).group(1) == str(game_id)
    page.get_by_role("button", name="Copy link").click()  # shown by invite.js
    expect(page.get_by_text("Copied.")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == url

    visitor = bob.page
    visitor.goto(copied)
    expect(
        visitor.get_by_role("heading", name="alice invites you to play")
    ).to_be_visible()
    expect(visitor.get_by_text("You play O; alice plays X")).to_be_visible()
    visitor.screenshot(path=artifacts / "invitation-logged-out.png")
    visitor.get_by_role("link", name="Log in").last.click()
    visitor.get_by_label("Username").fill("bob")
    visitor.get_by_label("Password").fill(bob.password)
    visitor.get_by_role("button", name="Log in").click()
    visitor.wait_for_url(copied)
    join = visitor.get_by_role("button", name=f"Join game {game_id}")
    expect(join).to_be_visible()
    visitor.screenshot(path=artifacts / "invitation.png")
    join.click()
    visitor.wait_for_url(f"**/games/{game_id}/")
    expect(visitor.get_by_text("You joined the game.")).to_be_visible()
    game = Game.objects.get(pk=game_id)
    assert (game.status, game.player_x, game.player_o) == (
        GameStatus.IN_PROGRESS,
        alice.user,
        bob.user,
    )

    # The link is used up: 410, and the creator's page no longer shows it.
    response = visitor.goto(copied)
    assert response.status == 410
    expect(visitor.get_by_text("This invitation has been used")).to_be_visible()
    page.reload()  # live updates need the stream server: tests/e2e/test_live_play
    expect(page.get_by_label(re.compile("^Invitation link"))).to_have_count(0)
    expect(alice.turn).to_have_text("Your turn.")


@BOTH_SCHEMES
def test_invitation_and_blocking_pages_pass_the_accessibility_audit(player, axe_source):
    alice = player("alice")
    bob = player("bob")
    visitor = player("visitor", account=False)
    invitation = services.create_invitation(creator=alice.user)
    services.block_player(blocker=alice.user, blocked=player("carol").user)
    link = f"/invitations/{invitation.game_id}/{invitation.secret}/"
    pages = [
        (
            "creator's game page with the link",
            alice.page,
            f"/games/{invitation.game_id}/",
        ),
        ("invitation, logged out", visitor.page, link),
        ("invitation, logged in", bob.page, link),
        ("own page with the blocked list", alice.page, "/players/alice/"),
        ("another's page with Block", bob.page, "/players/alice/"),
        ("another's page with Unblock", alice.page, "/players/carol/"),
    ]
    report = {}
    for name, page, path in pages:
        page.goto(path)
        report[name] = [
            violation
            for violation in audit(page, axe_source)
            if violation["impact"] in BLOCKING
        ]
    assert report == {name: [] for name, _, _ in pages}
