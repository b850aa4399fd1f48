"""Your turn, without watching the tab: the notification control, the system
notification of a hidden page (static/games/notify.js), the page's live region
and the keys 1 to 9 after a live update (static/games/keys.js).

Live updates need the real server, as in test_live_play. Each page records the
notifications it makes (window.Notification replaced by a recorder), the lock
requests by which tabs agree on who shows a change, and window.focus() calls
(in sessionStorage, which outlives the navigation a click starts). Tests make a
page hidden the way the browser does: document.visibilityState says "hidden"
and a visibilitychange event fires.
"""

import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.support.served import PLAIN_HTTP, serving

from .pages import NOTIFICATIONS, Player
from .test_accessibility import BLOCKING, audit

pytestmark = pytest.mark.notifications


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("your-turn")
    with serving(tmp_dir, "your_turn", workers=2, **PLAIN_HTTP) as app:
        yield app


def control(page: Page):
    return page.get_by_role("button", name="Notify me when it is my turn")


def turn_notifications_on(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#notify-state")).to_have_text("Off")
    control(page).click()
    expect(page.locator("#notify-state")).to_have_text("On")


def decisions(page: Page, key: str) -> list:
    """Whether this page got the lock of the change `key` (None: still asking)."""
    return page.evaluate(
        "name => window.lockRequests.filter(r => r.name === name).map(r => r.granted)",
        f"tictactoe:notice:{key}",
    )


def wait_for_decisions(pages: list[Page], key: str) -> list:
    """Every page's decision on `key`, once each page has made one."""
    for page in pages:
        page.wait_for_function(
            """name => window.lockRequests.some(r => r.name === name
                                                && r.granted !== null)""",
            arg=f"tictactoe:notice:{key}",
        )
    return [decision for page in pages for decision in decisions(page, key)]


def shown_in(pages: list[Page]) -> list:
    return [shown for page in pages for shown in page.evaluate(NOTIFICATIONS)]


def second_tab(context: BrowserContext, path: str) -> Page:
    page = context.new_page()
    page.goto(path)
    return page


def test_the_control_is_off_on_remembered_and_blocked(people):
    (ann,) = people("ann")
    page = ann.page
    page.goto("/")
    expect(control(page)).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#notify-state")).to_have_text("Off")
    control(page).click()
    expect(control(page)).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#notify-state")).to_have_text("On")
    page.reload()
    expect(page.locator("#notify-state")).to_have_text("On")  # localStorage
    ann.start_game("ann")  # self-play: no turn to wait for, no control
    expect(ann.turn).to_have_text("Your turn (X).")
    expect(control(page)).to_have_count(0)
    ann.start_game("")  # an open game: ann's own, so the control is there
    expect(page.locator("#notify-state")).to_have_text("On")
    control(page).click()
    expect(page.locator("#notify-state")).to_have_text("Off")
    page.goto("/")
    expect(control(page)).to_have_attribute("aria-pressed", "false")

    (cid,) = people("cid", notifications=False)  # headless Chromium says no
    cid.page.goto("/")
    control(cid.page).click()
    expect(cid.page.locator("#notify-state")).to_have_text("Blocked by the browser")
    expect(control(cid.page)).to_have_attribute("aria-pressed", "false")


def test_a_hidden_lobby_notifies_of_a_new_game_and_the_click_opens_it(people):
    ann, ben = people("ann", "ben")
    turn_notifications_on(ben.page)
    ben.page.evaluate("window.hidePage()")
    game_id = ann.start_game("ben")  # ann is X: ann moves first
    key = f"game-{game_id}-0"
    assert wait_for_decisions([ben.page], key) == [True]
    ben.page.wait_for_function("() => window.shownNotifications.length > 0")
    assert ben.page.evaluate(NOTIFICATIONS) == [
        [
            f"Game {game_id} against ann",
            "ann started a game against you.",
            f"game-{game_id}",
        ]
    ]
    with ben.page.expect_navigation():
        ben.page.evaluate("window.shownNotifications[0].onclick()")
    expect(ben.page).to_have_url(re.compile(rf"/games/{game_id}/$"))
    assert ben.page.evaluate("sessionStorage.getItem('focused')") == "1"


def test_one_of_two_hidden_tabs_notifies_and_never_of_your_own_move(people):
    amy, bo = people("amy", "bo")
    turn_notifications_on(bo.page)
    game_id = amy.start_game("bo")
    bo.open_game(game_id)
    lobby = second_tab(bo.page.context, "/")
    hidden = [bo.page, lobby]
    for page in hidden:
        page.evaluate("window.hidePage()")

    amy.play(1, 1)
    key = f"game-{game_id}-1"
    assert sorted(wait_for_decisions(hidden, key)) == [False, True]
    started = [
        f"Game {game_id} against amy",
        "amy started a game against you. Your turn.",
        f"game-{game_id}",
    ]
    assert shown_in(hidden) == [started]

    # bo moves in a third tab, a visible one; the hidden two learn of it.
    mover = Player(second_tab(bo.page.context, f"/games/{game_id}/"), "bo", "")
    mover.play(0, 0)
    expect(bo.turn).to_have_text("Waiting for amy (X).")
    row = lobby.locator("li", has=lobby.get_by_role("link", name=f"Game {game_id}"))
    expect(row).to_contain_text("Waiting for amy (X).")
    # The notify script runs as each new part goes in: neither asked again.
    assert [page.evaluate("window.lockRequests.length") for page in hidden] == [1, 1]
    assert shown_in(hidden) == [started]

    amy.play(2, 2)
    assert sorted(wait_for_decisions(hidden, f"game-{game_id}-3")) == [False, True]
    moved = [
        f"Game {game_id} against amy",
        "amy has moved. Your turn.",
        f"game-{game_id}",
    ]
    assert sorted(shown_in(hidden)) == sorted([started, moved])


def test_a_visible_page_does_not_notify(people):
    al, bea = people("al", "bea")
    turn_notifications_on(bea.page)
    game_id = al.start_game("bea")
    bea.open_game(game_id)
    al.play(1, 1)
    expect(bea.cell(1, 1).locator(".mark")).to_have_text("X")
    assert bea.page.evaluate("window.lockRequests.length") == 0
    assert bea.page.evaluate(NOTIFICATIONS) == []


def test_the_live_region_says_the_opponents_move_and_the_keys_play(people, axe_source):
    ann, dee = people("ann", "dee")
    game_id = ann.start_game("dee")
    dee.open_game(game_id)
    announcer = dee.page.locator("#live-announcer")
    expect(announcer).to_have_text("")
    expect(dee.page.get_by_text("Tip: keys 1 to 9")).to_have_count(0)

    ann.play(0, 0)
    expect(announcer).to_have_text("ann played X in row 1, column 1. Your turn.")
    hint = dee.page.get_by_text("Tip: keys 1 to 9 play a cell")
    expect(hint).to_be_visible()  # came with the live part: keys.js showed it
    dee.page.keyboard.press("5")
    expect(dee.cell(1, 1).locator(".mark")).to_have_text("O")
    expect(dee.turn).to_have_text("Waiting for ann (X).")

    ann.play(0, 1)
    expect(announcer).to_have_text("ann played X in row 1, column 2. Your turn.")
    dee.page.keyboard.press("9")
    expect(dee.cell(2, 2).locator(".mark")).to_have_text("O")
    ann.play(0, 2)
    expect(dee.page.locator("#live-announcer")).to_have_text(
        "ann played X in row 1, column 3. ann won."
    )
    assert blocking_violations(dee.page, axe_source) == []
    games, moves = served_moves(ann, game_id)
    assert games == "x_won"
    assert moves == [("X", 0, 0), ("O", 1, 1), ("X", 0, 1), ("O", 2, 2), ("X", 0, 2)]


def blocking_violations(page: Page, axe_source: str) -> list[dict]:
    return [found for found in audit(page, axe_source) if found["impact"] in BLOCKING]


def served_moves(player: Player, game_id: int) -> tuple[str, list]:
    """The game's status and moves as the server stores them (state.json)."""
    state = player.page.request.get(f"/games/{game_id}/state.json").json()
    return state["status"], [
        (move["player"], move["row"], move["col"]) for move in state["moves"]
    ]
