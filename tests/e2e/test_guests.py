"""An invited friend plays at once as a guest: alice sends her link, bob opens it
in a fresh browser, clicks Play as guest and is on the board; they play to the
end and a rematch. The same join without JavaScript, and the visitor's pages
pass the accessibility audit."""

import re
import time

from playwright.sync_api import expect

from accounts.models import Guest
from games import services
from games.models import Game, GameStatus
from tests.e2e.test_accessibility import BLOCKING, audit
from tests.e2e.test_two_players import take_turns

# X: 0,0 0,1 0,2 against O: 1,0 1,1 wins by the top row.
TOP_ROW = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]


def invite(alice) -> str:
    """alice invites by the lobby form and reads her link off her game page."""
    page = alice.page
    page.goto("/")
    page.get_by_label("Invite by link").check()
    page.get_by_role("button", name="Start game").click()
    page.wait_for_url(re.compile(r"/games/\d+/$"))
    return page.get_by_label(re.compile("^Invitation link")).input_value()


def play_as_guest(visitor, link: str, name: str) -> float:
    """Open the link, name the guest, Play as guest; the seconds from the
    navigation's start to the board on screen."""
    page = visitor.page
    started = time.monotonic()
    page.goto(link)
    page.get_by_label("Your name").fill(name)
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.get_by_role("button", name="Play as guest").click()
    expect(page.locator(".board")).to_be_visible()
    elapsed = time.monotonic() - started
    # One page load after the click: the game page (the POST's 302 lands there).
    page.wait_for_url(re.compile(r"/games/\d+/$"))
    assert len(navigations) == 1
    return elapsed


def test_an_invited_friend_plays_as_a_guest_then_a_rematch(player, artifacts):
    alice = player("alice", viewport={"width": 900, "height": 720})
    bob = player("bob-guest", account=False, viewport={"width": 900, "height": 720})
    link = invite(alice)
    game_id = alice.game_id

    seconds = play_as_guest(bob, link, "bob-guest")
    print(f"time to first board from the link (JavaScript on): {seconds:.3f} s")
    assert bob.game_id == game_id
    expect(bob.page.locator(".whoami")).to_have_text("Signed in as bob-guest (guest)")
    expect(bob.page.get_by_text("You joined the game as a guest.")).to_be_visible()
    expect(bob.turn).to_have_text("Waiting for alice (X).")
    bob.page.screenshot(path=artifacts / "guest-first-board.png")
    game = Game.objects.get(pk=game_id)
    assert game.status == GameStatus.IN_PROGRESS
    assert Guest.objects.filter(user=game.player_o).exists()

    alice.reload()
    expect(alice.page.locator(".players")).to_have_text(
        "X X: alice vs O O: bob-guest (guest)", use_inner_text=True
    )
    take_turns(alice, bob, TOP_ROW)
    bob.reload()
    expect(alice.turn).to_have_text("You win!")
    expect(bob.turn).to_have_text("alice (X) wins!")

    bob.page.get_by_role("button", name="Rematch (sides swapped)").click()
    bob.page.wait_for_url(lambda url: f"/games/{game_id}/" not in url)
    rematch = bob.game_id
    # alice's page is as her winning move left it: Rematch takes her there too.
    alice.page.get_by_role("button", name="Rematch (sides swapped)").click()
    alice.page.wait_for_url(f"**/games/{rematch}/")
    expect(bob.turn).to_have_text("Your turn.")
    bob.play(1, 1)
    alice.reload()
    expect(alice.page.locator(".players")).to_have_text(
        "X X: bob-guest (guest) vs O O: alice", use_inner_text=True
    )
    expect(alice.turn).to_have_text("Your turn.")

    # The guest's lobby lists both games and offers no new game.
    bob.page.goto("/")
    expect(bob.page.get_by_role("button", name="Start game")).to_have_count(0)
    expect(
        bob.page.get_by_role("link", name=f"Game {rematch}", exact=True)
    ).to_be_visible()


def test_play_as_guest_without_javascript(player):
    alice = player("alice")
    invitation = services.create_invitation(creator=alice.user, side="o")
    link = f"/invitations/{invitation.game_id}/{invitation.secret}/"
    visitor = player("nojs", account=False, java_script_enabled=False)

    seconds = play_as_guest(visitor, link, "nojs-guest")
    print(f"time to first board from the link (JavaScript off): {seconds:.3f} s")
    assert visitor.game_id == invitation.game_id
    expect(visitor.turn).to_have_text("Your turn.")
    visitor.play(0, 0)
    game = Game.objects.get(pk=invitation.game_id)
    assert (game.player_x.username, game.move_count) == ("nojs-guest", 1)


def test_an_open_game_link_and_the_visitor_pages_pass_the_audit(
    player, axe_source, artifacts
):
    alice = player("alice")
    visitor = player("visitor", account=False)
    invitation = services.create_invitation(creator=alice.user)
    open_game = services.create_game(creator=alice.user)
    pages = {
        "invitation, for a visitor": (
            f"/invitations/{invitation.game_id}/{invitation.secret}/"
        ),
        "open game, for a visitor": f"/games/{open_game.pk}/",
    }
    report = {}
    for name, path in pages.items():
        visitor.page.goto(path)
        expect(visitor.page.get_by_role("button", name="Play as guest")).to_be_visible()
        shot = "guest-" + name.replace(", ", "-").replace(" ", "-") + ".png"
        visitor.page.screenshot(path=artifacts / shot, full_page=True)
        report[name] = [
            violation
            for violation in audit(visitor.page, axe_source)
            if violation["impact"] in BLOCKING
        ]
    assert report == {name: [] for name in pages}

    play_as_guest(visitor, f"/games/{open_game.pk}/", "opener")
    assert visitor.game_id == open_game.pk
    expect(visitor.page.locator(".players")).to_have_text(
        "X X: alice vs O O: opener (guest)", use_inner_text=True
    )
