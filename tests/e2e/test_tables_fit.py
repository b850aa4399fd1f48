"""Every table fits its panel in every language, at a desktop's 1200 px and a
phone's 390 px: no cell (nor its text) outside the panel, and no horizontal
scroll. The player page holds the record table (the longest headings: German
"davon aufgegeben", "Unentschieden"), the game page the board.

Screenshots of the player page and of Language and time in German and Arabic,
at both widths, go to artifacts/screenshots/; .github/screenshots/ keeps copies.
"""

import pytest
from playwright.sync_api import Page

from games import services
from tests.conftest import DRAW, X_WINS_ROW_0, play_cells

LANGUAGES = ["en", "fr", "de", "es", "pt-br", "ar"]
WIDTHS = {"desktop": 1200, "phone": 390}
SHOT_LANGUAGES = {"de", "ar"}

# For each table of the page: how far (px) its cells, and the text in them,
# reach past the panel that holds it, on either side.
OVERFLOW = """() => [...document.querySelectorAll("table")].map((table) => {
  const panel = table.closest(".panel") || document.querySelector("main");
  const box = panel.getBoundingClientRect();
  const style = getComputedStyle(panel);
  const left = box.left + parseFloat(style.borderLeftWidth);
  const right = box.right - parseFloat(style.borderRightWidth);
  let worst = 0;
  for (const cell of table.querySelectorAll("th, td")) {
    const range = document.createRange();
    range.selectNodeContents(cell);
    for (const part of [cell.getBoundingClientRect(), range.getBoundingClientRect()]) {
      if (part.width === 0) continue;
      worst = Math.max(worst, left - part.left, part.right - right);
    }
  }
  return { table: table.className, over: Math.round(worst * 10) / 10 };
})"""


def overflow(page: Page) -> list[dict]:
    return page.evaluate(OVERFLOW)


def scrolls_sideways(page: Page) -> bool:
    return page.evaluate(
        "document.scrollingElement.scrollWidth > document.documentElement.clientWidth"
    )


@pytest.mark.django_db(transaction=True, reset_sequences=True)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_table_fits_its_panel(player, artifacts, language):
    # The browser's language (Accept-Language) and zone, which the page saves.
    alice = player(
        "alice",
        locale=language,
        timezone_id="Europe/Berlin",
        viewport={"width": 1200, "height": 900},
    )
    bob_user = player("bob").user
    # A record with numbers in every column, and a game left on its page.
    for _ in range(2):
        play_cells(services.create_game(creator=alice.user, opponent=bob_user), *DRAW)
    play_cells(
        services.create_game(creator=alice.user, opponent=bob_user), *X_WINS_ROW_0
    )
    services.forfeit(
        game_id=services.create_game(creator=bob_user, opponent=alice.user).pk,
        user=bob_user,
    )
    game = services.create_game(creator=alice.user, opponent=bob_user)
    page = alice.page
    folder = artifacts / "screenshots"
    folder.mkdir(exist_ok=True)
    found = []
    for width_name, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        for path in ["/players/alice/", f"/games/{game.pk}/", "/accounts/preferences/"]:
            page.goto(path)
            assert page.locator("html").get_attribute("lang") == language
            found += [
                (width_name, path, table["table"], table["over"])
                for table in overflow(page)
                if table["over"] > 0.5
            ]
            if scrolls_sideways(page):
                found.append((width_name, path, "page scrolls sideways", None))
            if language in SHOT_LANGUAGES and path != f"/games/{game.pk}/":
                name = "player" if path.startswith("/players/") else "language-and-time"
                page.screenshot(
                    path=folder / f"{name}-{language}-{width_name}.png",
                    full_page=True,
                )
    assert found == []
