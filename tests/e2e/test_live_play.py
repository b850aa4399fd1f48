"""Scenario 6: the other player's page updates by itself, with no reload.

Live updates need the real server (`make serve`: uvicorn, pages and streams,
2 processes), not the live_server fixture's WSGI thread, so this module starts
it on a database of its own, with plain-HTTP cookie settings for the browser.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.support.served import PLAIN_HTTP, serving

from .pages import LIVE_MS, Player


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("live")
    with serving(tmp_dir, "live", workers=2, **PLAIN_HTTP) as app:
        yield app


@pytest.fixture
def players(browser, served):
    base_url = f"http://127.0.0.1:{served.port}"
    keys = served.sessions_for(["ann", "ben"])
    contexts = []

    def player(name: str) -> Player:
        context = browser.new_context(base_url=base_url)
        context.set_default_timeout(LIVE_MS)
        context.add_cookies(
            [{"name": "sessionid", "value": keys[name], "url": base_url}]
        )
        contexts.append(context)
        return Player(context.new_page(), name, "", None)

    yield player("ann"), player("ben")
    for context in contexts:
        context.close()


def mark(player: Player, row: int, col: int):
    return player.cell(row, col).locator(".mark")


def test_moves_reach_the_other_page_without_a_reload(players):
    ann, ben = players
    ben.page.goto("/")
    ben.page.evaluate("window.notReloaded = true")

    game_id = ann.start_game("ben")
    # ben's lobby learns of the new game by itself.
    expect(
        ben.page.get_by_role("link", name=f"Game {game_id}", exact=True)
    ).to_be_visible()
    assert ben.page.evaluate("window.notReloaded") is True

    ben.open_game(game_id)
    expect(ben.cell_buttons).to_have_count(0)
    for (x_row, x_col), (o_row, o_col) in [((1, 1), (0, 0)), ((0, 1), (2, 2))]:
        ben.page.evaluate("window.notReloaded = true")
        ann.play(x_row, x_col)
        expect(mark(ben, x_row, x_col)).to_have_text("X")
        expect(ben.turn).to_have_text("Your turn.")
        expect(ben.page).to_have_title(re.compile(r"^● Your turn"))
        assert ben.page.evaluate("window.notReloaded") is True
        ben.play(o_row, o_col)  # ben's own move is an ordinary POST/redirect
        expect(mark(ann, o_row, o_col)).to_have_text("O")
        expect(ann.turn).to_have_text("Your turn.")

    ben.page.evaluate("window.notReloaded = true")
    ann.play(2, 1)  # X completes the middle column
    expect(ben.turn).to_have_text("ann (X) wins!")
    expect(ben.winning_cells).to_have_count(3)
    expect(ben.cell_buttons).to_have_count(0)
    assert ben.page.evaluate("window.notReloaded") is True


def test_an_abort_reaches_the_other_players_lobby_and_page(players):
    ann, ben = players
    ben.page.goto("/")
    ben.page.evaluate("window.notReloaded = true")
    game_id = ann.start_game("ben")
    # ben's lobby marks it as new, with Play and Abort right there.
    expect(ben.page.get_by_text("ann started a game against you.")).to_be_visible()
    expect(
        ben.page.get_by_role("link", name=f"Play game {game_id}", exact=True)
    ).to_be_visible()
    expect(
        ben.page.get_by_role("button", name=f"Abort game {game_id}", exact=True)
    ).to_be_visible()
    assert ben.page.evaluate("window.notReloaded") is True

    ben.open_game(game_id)
    ben.page.evaluate("window.notReloaded = true")
    # No move yet: Abort needs no confirmation.
    ann.page.get_by_role("button", name="Abort", exact=True).click()
    expect(ann.turn).to_have_text("Aborted by you.")
    expect(ben.turn).to_have_text("Aborted by ann.")
    expect(
        ben.page.get_by_role("button", name="Rematch (sides swapped)")
    ).to_be_visible()
    assert ben.page.evaluate("window.notReloaded") is True


def test_a_game_started_before_the_lobby_listens_still_reaches_the_lobby(players):
    """A change between the lobby's rendering and its stream's opening has no
    event: the lobby asks for its lists once the stream is open."""
    ann, ben = players
    held = []  # ben's lobby stream, kept from the server until ann's game exists
    ben.page.route("**/lobby/events/", lambda route: held.append(route))
    with ben.page.expect_request("**/lobby/events/"):
        ben.page.goto("/")
    ben.page.evaluate("window.notReloaded = true")
    game_id = ann.start_game("ben")
    assert len(held) == 1
    held[0].continue_()
    expect(
        ben.page.get_by_role("link", name=f"Play game {game_id}", exact=True)
    ).to_be_visible()
    assert ben.page.evaluate("window.notReloaded") is True
