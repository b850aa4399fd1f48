"""A shared game in the browser (issue 51): a visitor without an account
watches a public game's page update live, read-only; the embed, framed by a
page of another origin, follows a move live, passes the axe audit and fits a
390 px phone.

Live updates need the real server (as in test_live_play.py): this module starts
it on a database of its own. The foreign page is served by the browser itself
(a route on http://localhost:<port>, another origin than 127.0.0.1:<port>)."""

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from games import services
from tests.conftest import X_WINS_ROW_0, play_cells
from tests.e2e.test_accessibility import BLOCKING, audit
from tests.support.served import PLAIN_HTTP, serving

from .conftest import ARTIFACTS, BOTH_SCHEMES
from .pages import LIVE_MS, Player


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("sharing")
    with serving(tmp_dir, "sharing", workers=1, **PLAIN_HTTP) as app:
        yield app


@pytest.fixture
def people(browser, served):
    """ann and ben logged in, and a visitor with no account, each in a browser
    context of their own."""
    base_url = f"http://127.0.0.1:{served.port}"
    keys = served.sessions_for(["ann", "ben"])
    contexts = []

    def person(name: str, **options) -> Player:
        context = browser.new_context(base_url=base_url, **options)
        context.set_default_timeout(LIVE_MS)
        if name in keys:
            context.add_cookies(
                [{"name": "sessionid", "value": keys[name], "url": base_url}]
            )
        contexts.append(context)
        return Player(context.new_page(), name, "", None)

    yield person
    for context in contexts:
        context.close()


@contextmanager
def foreign_site(embed: str):
    """Another site (another origin: its own port) with a blog post that
    frames `embed`; yields the post's address."""
    body = (
        "<!doctype html><html lang='en'><title>A blog</title><h1>Our game</h1>"
        f"<iframe src='{embed}' width='360' height='460' title='The game' "
        "style='border:0'></iframe></html>"
    ).encode()

    class Post(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Post)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/a-blog-post"
    finally:
        server.shutdown()
        server.server_close()


def mark(player: Player, row: int, col: int):
    return player.cell(row, col).locator(".mark")


def test_a_visitors_read_only_page_follows_the_game_live(people):
    phone = {"width": 390, "height": 844}
    ann, ben, visitor = people("ann"), people("ben"), people("visitor", viewport=phone)
    game_id = ann.start_game("ben")
    ann.play(1, 1)
    visitor.open_game(game_id)
    expect(visitor.page.get_by_role("link", name="Log in to play")).to_be_visible()
    expect(visitor.page.get_by_role("link", name="Sign up").last).to_be_visible()
    expect(visitor.cell_buttons).to_have_count(0)
    expect(mark(visitor, 1, 1)).to_have_text("X")
    # The Share section with its embed code fits the phone; its script shows
    # Share (the Web Share API) or, without it, Copy link.
    expect(visitor.page.get_by_role("heading", name="Share this game")).to_be_visible()
    share = visitor.page.locator("[data-share-button]")
    expect(share).to_be_visible()
    has_share = visitor.page.evaluate("typeof navigator.share === 'function'")
    expect(share).to_have_text("Share" if has_share else "Copy link")
    assert visitor.page.evaluate("document.documentElement.scrollWidth") <= 390
    visitor.page.evaluate("window.notReloaded = true")
    ben.open_game(game_id)
    ben.play(0, 0)
    expect(mark(visitor, 0, 0)).to_have_text("O")
    expect(visitor.turn).to_have_text("Waiting for ann (X).")
    expect(visitor.cell_buttons).to_have_count(0)
    assert visitor.page.evaluate("window.notReloaded") is True


def test_the_embed_on_another_origins_page_follows_a_move(people, served, axe_source):
    ann, ben = people("ann"), people("ben")
    game_id = ann.start_game("ben")
    ann.play(1, 1)
    embed = f"http://127.0.0.1:{served.port}/games/{game_id}/embed/"
    reader = people("reader", viewport={"width": 390, "height": 844})
    with foreign_site(embed) as foreign:
        reader.page.goto(foreign)
    frame = reader.page.frame_locator("iframe")
    expect(frame.locator(".board tr").nth(1).locator("td").nth(1)).to_have_text(
        "X: row 2, column 2 X"
    )
    link = frame.get_by_role("link", name=f"Open game {game_id} on tictactoe")
    expect(link).to_have_attribute("target", "_blank")
    ben.open_game(game_id)
    ben.play(2, 2)
    expect(frame.locator(".board tr").nth(2).locator("td").nth(2)).to_have_text(
        "O: row 3, column 3 O"
    )
    expect(frame.locator(".turn")).to_have_text("Waiting for ann (X).")
    expect(link).to_be_visible()  # still there after the live swap
    ARTIFACTS.mkdir(exist_ok=True)
    reader.page.screenshot(path=ARTIFACTS / "embed-on-a-foreign-page.png")

    # The embed alone: axe clean, and no wider than a 390 px phone.
    reader.page.goto(embed)
    violations = audit(reader.page, axe_source)
    assert [v for v in violations if v["impact"] in BLOCKING] == []
    width = reader.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390


@BOTH_SCHEMES
def test_the_embed_of_a_won_game_passes_the_audit_on_a_phone(
    open_page, axe_source, django_user_model, color_scheme
):
    ann, ben = (
        django_user_model.objects.create_user(username=name) for name in ("ann", "ben")
    )
    won = play_cells(services.create_game(creator=ann, opponent=ben), *X_WINS_ROW_0)
    page = open_page(viewport={"width": 390, "height": 844})
    page.goto(f"/games/{won.pk}/embed/")
    expect(page.locator(".turn")).to_have_text("ann (X) wins!")
    violations = audit(page, axe_source)
    assert [v for v in violations if v["impact"] in BLOCKING] == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
