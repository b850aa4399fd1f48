"""People who use only a keyboard, and people on a phone."""

from playwright.sync_api import Page, expect

from games import services
from games.models import Move
from tests.conftest import play_cells

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}


def tab_to(page: Page, selector: str, limit: int = 40) -> int:
    """Press Tab until the focused element matches `selector`; returns the count."""
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return presses
    raise AssertionError(f"{limit} presses of Tab never reached {selector}")


def focused_label(page: Page) -> str:
    return page.evaluate("document.activeElement.getAttribute('aria-label')")


def test_keyboard_only_log_in_and_moves(player):
    alice = player("alice", logged_in=False)
    bob = player("bob", logged_in=False)
    for person in (alice, bob):
        page = person.page
        page.goto("/accounts/login/")
        expect(page.get_by_label("Username")).to_be_focused()  # autofocus
        page.keyboard.type(person.username)
        page.keyboard.press("Tab")
        page.keyboard.type(person.password)
        page.keyboard.press("Enter")
        expect(page.locator(".whoami")).to_have_text(f"Signed in as {person.username}")

    tab_to(alice.page, "input[name=opponent]")
    alice.page.keyboard.type("bob")
    alice.page.keyboard.press("Enter")
    expect(alice.turn).to_have_text("Your turn.")
    tab_to(alice.page, ".cell-button")
    assert focused_label(alice.page) == "Place X in row 1, column 1"
    # The focused cell is visibly marked (:focus-visible outline from app.css).
    outline = "getComputedStyle(document.activeElement).outlineStyle"
    assert alice.page.evaluate(outline) == "solid"
    alice.page.keyboard.press("Enter")
    expect(alice.cell(0, 0).locator(".mark")).to_have_text("X")

    bob.page.reload()  # the lobby now lists the game
    tab_to(bob.page, f"a[href='/games/{alice.game_id}/']")
    bob.page.keyboard.press("Enter")
    expect(bob.turn).to_have_text("Your turn.")
    tab_to(bob.page, ".cell-button")
    bob.page.keyboard.press("Tab")
    assert focused_label(bob.page) == "Place O in row 1, column 3"
    bob.page.keyboard.press("Space")
    expect(bob.cell(0, 2).locator(".mark")).to_have_text("O")
    assert bob.board() == "X-O------"


KEYS_HINT = (
    "Tip: keys 1 to 9 play a cell, as on a phone keypad: 1 is top left, 9 bottom right."
)


def stored_moves(game) -> list[tuple]:
    return list(
        Move.objects.filter(game=game)
        .order_by("sequence_number")
        .values_list("sequence_number", "player", "row", "col")
    )


def test_keys_1_to_9_play_the_cell_of_a_phone_keypad_on_your_turn(player, artifacts):
    alice = player("alice", viewport={"width": 720, "height": 800})
    bob = player("bob")
    game = services.create_game(creator=alice.user, opponent=bob.user)
    play_cells(game, (0, 0), (0, 2))
    posts = []

    def record(request) -> None:
        # Every POST but the browser's time zone, told once (static/games/timezone.js).
        if request.method == "POST" and not request.url.endswith("/i18n/timezone/"):
            posts.append(request.url)

    for person in (alice, bob):
        person.page.on("request", record)
    alice.open_game(game.pk)
    expect(alice.page.get_by_text(KEYS_HINT)).to_be_visible()  # keys.js runs
    alice.page.screenshot(path=artifacts / "game-keyboard-hint.png")
    for key in ("Alt+4", "Control+5", "Shift+6", "Meta+8"):
        alice.page.keyboard.press(key)  # with a modifier: not a move
    alice.page.keyboard.press("5")
    expect(alice.cell(1, 1).locator(".mark")).to_have_text("X")
    expect(alice.turn).to_have_text("Waiting for bob (O).")
    expect(alice.page.get_by_text(KEYS_HINT)).to_have_count(0)
    alice.page.keyboard.press("2")  # bob's turn: nothing

    bob.open_game(game.pk)
    expect(bob.page.get_by_text(KEYS_HINT)).to_be_visible()
    bob.page.keyboard.press("5")  # taken: nothing
    bob.page.keyboard.press("7")
    expect(bob.cell(2, 0).locator(".mark")).to_have_text("O")
    assert stored_moves(game) == [
        (1, "X", 0, 0),
        (2, "O", 0, 2),
        (3, "X", 1, 1),
        (4, "O", 2, 0),
    ]
    assert posts == [f"{alice.page.url}move/", f"{bob.page.url}move/"]


def test_without_javascript_no_keys_hint_and_no_notify_control(player):
    alice = player("alice", java_script_enabled=False)
    game = services.create_game(creator=alice.user, opponent=None)
    alice.page.goto("/")
    expect(alice.page.get_by_role("heading", name="Lobby")).to_be_visible()
    for hidden in ("Notify me when it is my turn",):
        expect(alice.page.get_by_text(hidden)).to_have_count(1)
        expect(alice.page.get_by_text(hidden)).to_be_hidden()
    services.join_game(game_id=game.pk, user=player("bob").user)
    alice.open_game(game.pk)
    expect(alice.turn).to_have_text("Your turn.")
    for hidden in (KEYS_HINT, "Notify me when it is my turn"):
        expect(alice.page.get_by_text(hidden)).to_have_count(1)  # there, hidden
        expect(alice.page.get_by_text(hidden)).to_be_hidden()


def assert_no_horizontal_scrolling(page: Page) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], (
        f"page is {widths[0]}px wide on a {widths[1]}px screen"
    )


def assert_board_on_first_screen(page: Page) -> None:
    """The whole board is visible as the page opens: no scrolling either way."""
    assert_no_horizontal_scrolling(page)
    box = page.locator(".board").bounding_box()
    width, height = page.evaluate("[innerWidth, innerHeight]")
    assert box["x"] >= 0, box
    assert box["y"] >= 0, box
    assert box["x"] + box["width"] <= width, box
    assert box["y"] + box["height"] <= height, box


def test_phone_shows_the_whole_board_without_horizontal_scrolling(player, artifacts):
    # Long names are the usual way a layout overflows on a narrow screen.
    x = player("maximilian_alexander_longname", **PHONE)
    o = player("bartholomew_featherstonehaugh", **PHONE)
    game_id = x.start_game(opponent=o.username)
    assert_board_on_first_screen(x.page)
    for cell in x.cell_buttons.all():
        box = cell.bounding_box()
        assert box["width"] >= 44, box  # comfortable touch targets
        assert box["height"] >= 44, box
    x.play(1, 1, tap=True)

    o.page.goto("/")
    assert_no_horizontal_scrolling(o.page)
    o.open_game(game_id)
    assert_board_on_first_screen(o.page)
    o.page.screenshot(path=artifacts / "game-on-a-phone.png")
    o.play(0, 0, tap=True)
    expect(o.turn).to_have_text(f"Waiting for {x.username} (X).")
