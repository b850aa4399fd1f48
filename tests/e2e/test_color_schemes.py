"""The system's dark setting (prefers-color-scheme: dark) changes the site's
colours, focus rings stand out in both schemes, and the first pages an invited
friend sees (the invitation, the game, the lobby) fit a 390 px phone in both.
axe audits every page in both schemes in test_accessibility.py,
test_invitations.py and test_mfa.py.

The screenshot test saves the invitation and a game, light and dark, on a phone
and on a desktop, in artifacts/screenshots/; the README shows them from
.github/screenshots/ (docs/testing.md says how to refresh them)."""

import re

import pytest
from playwright.sync_api import Page, expect

from games import services
from tests.conftest import play_cells
from tests.e2e.conftest import BOTH_SCHEMES

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True}
DESKTOP = {"width": 1024, "height": 720}
# The page's background in each scheme (static/games/app.css, --paper).
BACKGROUNDS = {"light": "rgb(255, 255, 255)", "dark": "rgb(21, 24, 28)"}


def body_background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def page_width(page: Page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


def contrast(first: str, second: str) -> float:
    """WCAG's contrast ratio of two computed colours ("rgb(r, g, b)")."""

    def luminance(colour: str) -> float:
        channels = [int(value) / 255 for value in re.findall(r"\d+", colour)[:3]]
        red, green, blue = [
            c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
            for c in channels
        ]
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    high, low = sorted(map(luminance, (first, second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


# The focused element's ring colour, and the first opaque background behind it.
FOCUS_RING = """() => {
  const focused = document.activeElement;
  let behind = focused.parentElement;
  while (getComputedStyle(behind).backgroundColor === "rgba(0, 0, 0, 0)") {
    behind = behind.parentElement;
  }
  return [focused.outerHTML.slice(0, 60), getComputedStyle(focused).outlineColor,
          getComputedStyle(behind).backgroundColor];
}"""


@pytest.mark.parametrize(
    "path", ["/", "/accounts/login/", "/games/archive/", "/games/99999/"]
)
def test_the_dark_scheme_changes_the_colours(player, path):
    light = player("alice", color_scheme="light")
    dark = player("bob", color_scheme="dark")
    light.page.goto(path)
    dark.page.goto(path)
    backgrounds = {
        "light": body_background(light.page),
        "dark": body_background(dark.page),
    }
    assert backgrounds == BACKGROUNDS
    # Form controls and scrollbars follow the scheme too.
    meta = dark.page.locator("meta[name=color-scheme]")
    assert meta.get_attribute("content") == "light dark"


@BOTH_SCHEMES
def test_focus_rings_stand_out_from_what_is_behind_them(player, color_scheme):
    """WCAG 1.4.11: a focus ring keeps 3:1 against its surroundings, here every
    stop of the keyboard through the lobby (header, panels, buttons)."""
    alice = player("alice")
    services.create_game(creator=player("bob").user, opponent=alice.user)
    page = alice.page
    page.goto("/")
    expect(page.get_by_role("heading", name="Lobby")).to_be_visible()
    rings = []
    for _ in range(16):
        page.keyboard.press("Tab")
        rings.append(page.evaluate(FOCUS_RING))
    faint = [
        (element, ring, behind, round(contrast(ring, behind), 2))
        for element, ring, behind in rings
        if contrast(ring, behind) < 3
    ]
    assert faint == []


@BOTH_SCHEMES
# The same game number in every screenshot, whichever scheme ran first.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_first_pages_fit_a_phone_and_their_screenshots(player, artifacts, color_scheme):
    folder = artifacts / "screenshots"
    folder.mkdir(exist_ok=True)
    alice = player("alice", **PHONE)
    visitor = player("visitor", account=False, **PHONE)
    bob = player("bob", **PHONE)
    invitation = services.create_invitation(creator=alice.user)

    page = visitor.page
    page.goto(f"/invitations/{invitation.game_id}/{invitation.secret}/")
    expect(
        page.get_by_role("heading", name="alice invites you to play")
    ).to_be_visible()
    assert body_background(page) == BACKGROUNDS[color_scheme]
    assert page_width(page) <= 390
    shoot(page, folder / f"invitation-{color_scheme}")

    game = services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=bob.user
    )
    play_cells(game, (1, 1), (0, 0), (0, 1))
    bob.open_game(game.pk)
    expect(bob.turn).to_have_text("Your turn.")
    assert page_width(bob.page) <= 390
    shoot(bob.page, folder / f"game-{color_scheme}")

    bob.page.goto("/")
    expect(bob.page.get_by_role("heading", name="Lobby")).to_be_visible()
    assert page_width(bob.page) <= 390


def shoot(page: Page, stem) -> None:
    """The whole page at 390 px (as it is now), then at a desktop's width."""
    page.screenshot(path=stem.with_name(f"{stem.name}-phone.png"), full_page=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=stem.with_name(f"{stem.name}-desktop.png"), full_page=True)
    page.set_viewport_size(PHONE["viewport"])
