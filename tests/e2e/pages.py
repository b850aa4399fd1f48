"""A person at a browser, described in the words of the pages they see."""

import re
from dataclasses import dataclass

from playwright.sync_api import Locator, Page, expect

GAME_URL = re.compile(r"/games/(\d+)/$")
LIVE_MS = 10_000  # a bounded wait for the pushed update; typical is well under 1 s
# Added to a browser context: each page records the notifications it makes
# (window.Notification replaced), the lock requests by which tabs agree on who
# shows a change, and window.focus() calls (in sessionStorage); window.hidePage()
# hides the page the way the browser does.
RECORDER = """
(() => {
  const Real = window.Notification;
  window.shownNotifications = [];
  window.Notification = class {
    constructor(title, options) {
      this.title = title;
      this.body = options.body;
      this.tag = options.tag;
      this.onclick = null;
      window.shownNotifications.push(this);
    }
    static get permission() { return Real.permission; }
    static requestPermission() { return Real.requestPermission(); }
    close() {}
  };
  window.lockRequests = [];
  const request = LockManager.prototype.request;
  LockManager.prototype.request = function (name, options, callback) {
    const entry = {name: name, granted: null};
    window.lockRequests.push(entry);
    return request.call(this, name, options, (lock) => {
      entry.granted = lock !== null;
      return callback(lock);
    });
  };
  window.focus = () => {
    sessionStorage.setItem("focused", Number(sessionStorage.getItem("focused")) + 1);
  };
  let hidden = false;
  Object.defineProperty(Document.prototype, "visibilityState", {
    configurable: true, get: () => (hidden ? "hidden" : "visible"),
  });
  Object.defineProperty(Document.prototype, "hidden", {
    configurable: true, get: () => hidden,
  });
  window.hidePage = () => {
    hidden = true;
    document.dispatchEvent(new Event("visibilitychange"));
  };
})();
"""
NOTIFICATIONS = "window.shownNotifications.map(n => [n.title, n.body, n.tag])"


@dataclass
class Player:
    page: Page
    username: str
    password: str
    user: object = None  # the Django account, once it exists

    def sign_up(self) -> None:
        page = self.page
        page.goto("/accounts/signup/")
        page.get_by_label("Username").fill(self.username)
        page.get_by_label("Password:", exact=True).fill(self.password)
        page.get_by_label("Password (again):").fill(self.password)
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_role("heading", name="Lobby")).to_be_visible()
        expect(page.locator(".whoami")).to_have_text(f"Signed in as {self.username}")

    def start_game(self, opponent: str = "", side: str = "X (moves first)") -> int:
        """Start a game from the lobby form; returns its id (from the URL)."""
        page = self.page
        page.goto("/")
        page.get_by_label("Opponent's username").fill(opponent)
        page.get_by_role("radio", name=side, exact=True).check()
        page.get_by_role("button", name="Start game").click()
        page.wait_for_url(GAME_URL)
        return self.game_id

    @property
    def game_id(self) -> int:
        return int(GAME_URL.search(self.page.url).group(1))

    def open_game(self, game_id: int) -> None:
        self.page.goto(f"/games/{game_id}/")

    def reload(self) -> None:
        self.page.reload()

    @property
    def turn(self) -> Locator:
        return self.page.locator(".turn")

    @property
    def cell_buttons(self) -> Locator:
        return self.page.locator(".board button")

    @property
    def winning_cells(self) -> Locator:
        return self.page.locator(".board td.cell-win")

    def cell(self, row: int, col: int) -> Locator:
        return self.page.locator(".board tr").nth(row).locator("td").nth(col)

    def play(self, row: int, col: int, *, tap: bool = False) -> None:
        """Click (or tap) an empty cell; wait until the page shows the new mark."""
        button = self.cell(row, col).get_by_role("button")
        mark = button.get_attribute("aria-label").split()[1]  # "Place X in ..."
        if tap:
            button.tap()
        else:
            button.click()
        expect(self.cell(row, col).locator(".mark")).to_have_text(mark)

    def board(self) -> str:
        """The board as shown: nine characters, "X", "O" or "-", row by row."""
        return self.page.locator(".board td").evaluate_all(
            "tds => tds.map(td => td.querySelector('.mark')?.textContent.trim() || '-')"
            ".join('')"
        )

    def winning_line(self) -> list[tuple[int, int]]:
        """(row, col) of every cell the page highlights as the winning line."""
        indexes = self.page.locator(".board td").evaluate_all(
            "tds => tds.flatMap((td, i) => td.matches('.cell-win') ? [i] : [])"
        )
        return [divmod(index, 3) for index in indexes]
