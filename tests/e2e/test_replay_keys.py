"""Replay in a real browser: the links work, and with JavaScript the arrow keys,
Home and End step through the moves (static/games/replay.js, under the real CSP)."""

import re

from playwright.sync_api import expect

from games import services
from tests.conftest import play_cells

WIN = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]


def at_ply(page, ply: int) -> None:
    """The replay page of move `ply` is open and its script runs: replay.js is
    deferred, so a key pressed before DOMContentLoaded would find no listener."""
    expect(page).to_have_url(re.compile(rf"\?ply={ply}$"))
    page.wait_for_load_state("domcontentloaded")


def test_keys_step_through_a_finished_game(player):
    alice = player("alice")
    bob = player("bob")
    game = play_cells(services.create_game(creator=alice.user, opponent=bob.user), *WIN)
    page = alice.page
    errors = []
    page.on(
        "console", lambda message: message.type == "error" and errors.append(message)
    )
    alice.open_game(game.pk)
    page.get_by_role("link", name="Replay this game").click()
    at_ply(page, 0)
    assert alice.board() == "---------"

    page.keyboard.press("ArrowRight")
    at_ply(page, 1)
    page.keyboard.press("ArrowRight")
    at_ply(page, 2)
    assert alice.board() == "X--O-----"
    expect(page.locator("[aria-current=step]")).to_have_text("2. O: row 2, column 1")

    page.keyboard.press("End")
    at_ply(page, 5)
    assert alice.winning_line() == [(0, 0), (0, 1), (0, 2)]
    page.keyboard.press("ArrowRight")  # already at the end: stays
    page.keyboard.press("ArrowLeft")
    at_ply(page, 4)
    page.keyboard.press("Home")
    at_ply(page, 0)

    page.get_by_role("link", name="Next ›").click()  # the links work on their own
    at_ply(page, 1)
    assert errors == []
