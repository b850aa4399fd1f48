"""A game shared beyond its page (games.sharing, games.sharing_views): the link
preview's tags and image, a finished game's GIF and text record, the embed that
any site may frame; a private game's every one the 404 of a missing game."""

import io
import re
from html import unescape

import pytest
from django.core.cache import caches
from django.test import Client
from PIL import Image

from games import pictures, services
from games.models import Game

from ..conftest import X_WINS_ROW_0
from ..support.bodies import comparable, text

MISSING = 999999
SITE = "https://ttt.example.com"
CRAWLERS = [
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
    "WhatsApp/2.23.20.0 A",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    # iMessage's previews fetch as Facebook's and Twitter's crawlers at once.
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 "
    "(KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 "
    "Facebot Twitterbot/1.0",
]


@pytest.fixture(autouse=True)
def site_url(settings):
    settings.SITE_URL = SITE


@pytest.fixture(autouse=True)
def no_pictures():
    caches["pictures"].clear()
    yield
    caches["pictures"].clear()


@pytest.fixture
def won(game, play) -> Game:
    """alice (X) beat bob (O) along the top row."""
    return play(game, *X_WINS_ROW_0)


def meta(page: str) -> dict[str, str]:
    """The page's <meta property|name=… content=…> tags."""
    return {
        name: unescape(value)
        for name, value in re.findall(
            r'<meta (?:property|name)="([^"]+)" content="([^"]*)">', page
        )
    }


def crawl(path: str, agent: str = CRAWLERS[0], **headers):
    return Client(HTTP_USER_AGENT=agent, **headers).get(path)


# -- the preview's tags ------------------------------------------------------


@pytest.mark.parametrize("agent", CRAWLERS)
def test_a_crawler_gets_the_tags_of_a_game_in_progress(game, alice, agent):
    services.play_move(game_id=game.pk, user=alice, row=1, col=1)
    response = crawl(f"/games/{game.pk}/", agent)
    assert response.status_code == 200
    assert "sessionid" not in response.cookies
    tags = meta(text(response))
    assert tags["og:title"] == f"Game {game.pk}: alice vs bob"
    assert tags["og:description"] == "Waiting for bob (O)."
    assert tags["og:url"] == f"{SITE}/games/{game.pk}/"
    assert tags["og:image"] == f"{SITE}/games/{game.pk}/preview/2.png"
    assert tags["og:image:alt"] == (
        "Board after 1 move: X: row 2, column 2. Waiting for bob (O)."
    )
    assert tags["twitter:card"] == "summary_large_image"
    assert tags["twitter:image"] == tags["og:image"]
    image = crawl(tags["og:image"].removeprefix(SITE), agent)
    assert image.status_code == 200
    assert image["Content-Type"] == "image/png"


def test_a_finished_games_tags_say_the_result(won):
    tags = meta(text(crawl(f"/games/{won.pk}/")))
    assert tags["og:title"] == f"Game {won.pk}: alice vs bob — alice (X) wins!"
    assert tags["og:description"] == "alice (X) wins!"
    # The cells row by row, as the board reads.
    assert tags["og:image:alt"] == (
        "Board after 5 moves: X: row 1, column 1; X: row 1, column 2; "
        "X: row 1, column 3; O: row 2, column 1; O: row 2, column 2. "
        "alice (X) wins!"
    )


def test_the_tags_speak_the_crawlers_language(won):
    tags = meta(text(crawl(f"/games/{won.pk}/", HTTP_ACCEPT_LANGUAGE="fr")))
    assert tags["og:description"] == "alice (X) gagne\u00a0!"
    assert tags["og:url"] == f"{SITE}/games/{won.pk}/"


def test_a_players_page_carries_the_tags_too(game, as_alice):
    tags = meta(text(as_alice.get(f"/games/{game.pk}/")))
    assert tags["og:image"] == f"{SITE}/games/{game.pk}/preview/{game.version}.png"


def test_the_image_address_changes_with_the_board(game, alice):
    first = meta(text(crawl(f"/games/{game.pk}/")))["og:image"]
    services.play_move(game_id=game.pk, user=alice, row=0, col=0)
    second = meta(text(crawl(f"/games/{game.pk}/")))["og:image"]
    assert first != second
    old = crawl(first.removeprefix(SITE))
    assert old.status_code == 302
    assert old["Location"] == second.removeprefix(SITE)
    assert old["Cache-Control"] == "no-cache"


# -- the preview image -------------------------------------------------------


def test_the_image_is_a_png_large_and_small_enough_kept_for_ever(
    won, django_assert_num_queries
):
    path = f"/games/{won.pk}/preview/{won.version}.png"
    with django_assert_num_queries(1):  # the game's read; the picture drawn
        response = crawl(path)
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert len(response.content) <= 300 * 1024
    picture = Image.open(io.BytesIO(response.content))
    assert picture.format == "PNG"
    assert picture.size == (1200, 630)  # at least 600 × 315
    # The winning line (green) is drawn across the top row of the board.
    assert picture.convert("RGB").getpixel((315, 145)) == (22, 163, 74)
    with django_assert_num_queries(1):  # from the cache: not drawn again
        again = crawl(path)
    assert again.content == response.content


def test_the_picture_is_drawn_once_per_version(won, monkeypatch):
    drawn = []
    real = pictures.preview_png
    monkeypatch.setattr(pictures, "preview_png", lambda g: drawn.append(g) or real(g))
    for _ in range(3):
        assert crawl(f"/games/{won.pk}/preview/{won.version}.png").status_code == 200
    assert len(drawn) == 1


def test_an_empty_board_and_an_open_sides_image_draw(alice, as_alice):
    waiting = services.create_game(creator=alice)
    path = f"/games/{waiting.pk}/preview/{waiting.version}.png"
    response = as_alice.get(path)
    assert response.status_code == 200
    # A visitor sees no game before it started: the missing game's 404.
    assert crawl(path).status_code == 404


# -- the GIF and the text record ---------------------------------------------


def test_a_finished_game_offers_its_gif_and_text_record(won):
    page = text(crawl(f"/games/{won.pk}/"))
    assert f'href="/games/{won.pk}/moves.gif" download>' in page
    assert f'href="/games/{won.pk}/moves.txt" download>' in page


def test_the_gif_has_a_frame_a_move_and_a_pause_on_the_end(won):
    response = crawl(f"/games/{won.pk}/moves.gif")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/gif"
    assert response["Content-Disposition"] == (
        f'attachment; filename="tictactoe-game-{won.pk}.gif"'
    )
    assert response["Cache-Control"] == "public, max-age=3600"
    gif = Image.open(io.BytesIO(response.content))
    assert gif.n_frames == 6  # the empty board, then five moves
    durations = []
    for frame in range(gif.n_frames):
        gif.seek(frame)
        durations.append(gif.info["duration"])
    assert durations == [800, 800, 800, 800, 800, 3000]


def test_the_text_record_names_the_cells_as_the_page_does(won):
    response = crawl(f"/games/{won.pk}/moves.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="tictactoe-game-{won.pk}.txt"'
    )
    assert response.content.decode() == (
        f"Game {won.pk}: alice vs bob — alice (X) wins!\n"
        "\n"
        "1. X: row 1, column 1\n"
        "2. O: row 2, column 1\n"
        "3. X: row 1, column 2\n"
        "4. O: row 2, column 2\n"
        "5. X: row 1, column 3\n"
        "\n"
        "alice (X) wins!\n"
    )


def test_the_text_record_in_the_readers_language(won):
    response = crawl(f"/games/{won.pk}/moves.txt", HTTP_ACCEPT_LANGUAGE="fr")
    assert "alice (X) gagne\u00a0!" in response.content.decode()


@pytest.mark.parametrize("route", ["moves.gif", "moves.txt"])
def test_a_game_in_progress_has_no_download_yet(game, route):
    response = crawl(f"/games/{game.pk}/{route}")
    assert response.status_code == 409
    assert "This game is still being played" in text(response)
    assert "moves.gif" not in text(crawl(f"/games/{game.pk}/"))


# -- the embed ---------------------------------------------------------------


def test_the_embed_is_the_board_alone_and_may_be_framed_anywhere(
    won, django_assert_num_queries
):
    with django_assert_num_queries(1):
        response = crawl(f"/games/{won.pk}/embed/")
    assert response.status_code == 200
    assert "X-Frame-Options" not in response
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors *" in csp
    assert "script-src 'self'" in csp
    page = text(response)
    assert "<bdi>alice</bdi>" in page
    assert "<bdi>bob</bdi>" in page
    assert "alice (X) wins!" in page
    assert 'class="cell cell-win' in page
    assert "<form" not in page
    link = f'href="{SITE}/games/{won.pk}/" target="_blank" rel="noopener"'
    assert link in page
    assert f'data-live="/games/{won.pk}/embed/live/"' in page
    assert f'data-events="/games/{won.pk}/events/"' in page


def test_every_other_page_still_refuses_frames(won):
    response = crawl(f"/games/{won.pk}/")
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_the_embeds_live_part_follows_the_game(game, alice):
    before = crawl(f"/games/{game.pk}/embed/live/")
    assert before.status_code == 200
    assert before["Cache-Control"] == "no-store"
    assert "X-Frame-Options" not in before
    services.play_move(game_id=game.pk, user=alice, row=2, col=2)
    after = text(crawl(f"/games/{game.pk}/embed/live/"))
    assert f'data-version="{game.version + 1}"' in after
    assert "X: row 3, column 3" in after
    assert "<html" not in after


def test_the_game_page_offers_share_and_the_embed_snippet(won):
    page = text(crawl(f"/games/{won.pk}/"))
    assert f'data-url="{SITE}/games/{won.pk}/"' in page
    assert "data-share-button hidden" in page
    snippet = f"&lt;iframe src=&quot;{SITE}/games/{won.pk}/embed/&quot; width=&quot;360"
    assert snippet in page
    assert '<script src="/static/games/share.js' in page


def test_a_private_game_offers_no_share(won, bob, as_bob):
    services.set_private(game_id=won.pk, user=bob, private=True)
    assert "Share this game" not in text(as_bob.get(f"/games/{won.pk}/"))


# -- a private game: the 404 of a missing one, on every route ----------------

ROUTES = ["preview/{version}.png", "moves.gif", "moves.txt", "embed/", "embed/live/"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_private_games_every_picture_and_embed_is_a_missing_games(
    won, bob, as_carol, as_alice, route
):
    services.set_private(game_id=won.pk, user=bob, private=True)
    version = Game.objects.get(pk=won.pk).version
    for client in (Client(), as_carol):
        asked = f"/games/{won.pk}/" + route.format(version=version)
        missing = f"/games/{MISSING}/" + route.format(version=version)
        hidden, absent = client.get(asked), client.get(missing)
        assert hidden.status_code == absent.status_code == 404
        assert comparable(hidden.content, asked) == comparable(absent.content, missing)
        assert hidden["Content-Type"] == absent["Content-Type"]
    response = as_alice.get(f"/games/{won.pk}/" + route.format(version=version))
    assert response.status_code == 200
    if route.startswith("preview"):
        assert response["Cache-Control"] == "private, max-age=31536000, immutable"
