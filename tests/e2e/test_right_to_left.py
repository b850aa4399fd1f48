"""Arabic in the browser: the page mirrors (dir="rtl"), the board does not (row 1,
column 1 is the top-left cell and key 1 plays it), the language menu works
without JavaScript, and axe finds nothing serious, in both colour schemes.

Screenshots of the lobby and a game in Arabic, at 390 px and at a desktop's
width, light and dark, go to artifacts/screenshots/ beside the English ones
(test_color_schemes.py); .github/screenshots/ keeps copies (docs/testing.md says
how to refresh them). test_languages.py plays a whole game in Arabic, French and
German, live updates and notifications included."""

import pytest
from playwright.sync_api import Page, expect

from games import services
from games.models import Move
from tests.conftest import play_cells
from tests.e2e.conftest import BOTH_SCHEMES
from tests.e2e.test_accessibility import audit
from tests.e2e.test_color_schemes import PHONE, page_width, shoot

ARABIC = {"locale": "ar", **PHONE}
SERIOUS = {"serious", "critical"}


def box(page: Page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


@BOTH_SCHEMES
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_arabic_mirrors_the_page_but_not_the_board(
    player, axe_source, artifacts, color_scheme
):
    folder = artifacts / "screenshots"
    folder.mkdir(exist_ok=True)
    alice = player("alice", **ARABIC)
    bob = player("bob", **ARABIC)
    game = services.create_game(creator=alice.user, opponent=bob.user)
    play_cells(game, (1, 1), (0, 2))
    page = alice.page

    page.goto("/")
    html = page.locator("html")
    expect(html).to_have_attribute("lang", "ar")
    expect(html).to_have_attribute("dir", "rtl")
    # The header mirrors: the name of the site at the right, the links to its left.
    brand, account = box(page, ".brand"), box(page, "nav[aria-label]")
    assert brand["x"] > account["x"]
    assert page_width(page) <= 390  # nothing pushed out at the start side
    assert [v for v in audit(page, axe_source) if v["impact"] in SERIOUS] == []
    shoot(page, folder / f"lobby-ar-{color_scheme}")

    alice.open_game(game.pk)
    expect(html).to_have_attribute("dir", "rtl")
    cells = [
        [box(page, f".board tr:nth-child({r}) td:nth-child({c})") for c in (1, 2, 3)]
        for r in (1, 2, 3)
    ]
    for row in cells:
        assert row[0]["x"] < row[1]["x"] < row[2]["x"]  # column 1 at the left
    assert cells[0][0]["y"] < cells[1][0]["y"] < cells[2][0]["y"]
    assert alice.board() == "--O-X----"
    assert page_width(page) <= 390
    assert [v for v in audit(page, axe_source) if v["impact"] in SERIOUS] == []
    shoot(page, folder / f"game-ar-{color_scheme}")

    page.keyboard.press("1")  # the phone keypad's 1: top left, in every language
    expect(alice.cell(0, 0).locator(".mark")).to_have_text("X")
    assert Move.objects.filter(game=game).order_by("-sequence_number").values_list(
        "row", "col"
    )[0] == (0, 0)


def test_the_language_menu_works_without_javascript(player):
    alice = player("alice", java_script_enabled=False, locale="fr-FR")
    page = alice.page
    page.goto("/games/archive/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    # Found by its place, not its words: they are French here.
    page.locator("nav.language-menu select").select_option("de")
    page.locator("nav.language-menu button").click()
    page.wait_for_url("**/games/archive/")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    page.goto("/")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    page.locator("nav.language-menu select").select_option("ar")
    page.locator("nav.language-menu button").click()
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
