"""A game in the browser's language: French, German and Arabic.

Each browser context has its `locale` set (Playwright sends it as
Accept-Language, as a browser set to that language does) and nothing else: no
language menu, no saved choice. Two players in the same language play against
each other on the real server (`make serve`, one for the module; live updates
need it, as in test_live_play): the lobby, its form and the notify control, the
game page, the button and the accessible name of each cell, the keys 1 to 9, the
live region's announcement of the opponent's move, the system notification of a
hidden page (window.Notification recorded, as in test_your_turn) and a refusal
(a move from a second tab whose live updates are off, on a board that changed
since: 409, said in the page's alert) all come in that language; in Arabic the
page is right-to-left and the board is not. axe audits the lobby and the game
page in each language.

The expected words are copied from the translators' catalogs (the msgstr of
each message, its placeholders filled in by hand), not computed by the code
under test.
"""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.served import PLAIN_HTTP, serving

from .pages import GAME_URL, NOTIFICATIONS, Player
from .test_your_turn import blocking_violations

pytestmark = pytest.mark.notifications

# Every word a person reads in the scenario, per browser locale: copied from
# the catalogs' msgstr. {id} is the game's number, {ann} and {ben} the players'
# names; everything else is literal.
WORDS = {
    "fr-FR": {
        "lang": "fr",
        "dir": "ltr",
        "lobby": "Salon",
        "opponent": "Nom d’utilisateur de l’adversaire",
        "side_x": "X (joue en premier)",
        "start": "Lancer la partie",
        "notify": "M’avertir quand c’est mon tour",
        "notify_on": "Activées",
        "game": "Partie {id}",
        "waiting_for_ann": "En attente de {ann} (X).",
        "waiting_for_ben": "En attente de {ben} (O).",
        "your_turn": "À vous de jouer.",
        "title_your_turn": "● À vous de jouer — ",
        "place_x_r1c1": "Placer X en ligne 1, colonne 1",
        "place_x_r1c2": "Placer X en ligne 1, colonne 2",
        "place_o_r2c3": "Placer O en ligne 2, colonne 3",
        "x_r1c1": "X\u00a0: ligne 1, colonne 1",
        "o_r3c3": "O\u00a0: ligne 3, colonne 3",
        "keys_hint": (
            "Astuce\u00a0: les touches 1 à 9 jouent une case, comme sur le clavier "
            "d’un téléphone\u00a0: 1 en haut à gauche, 9 en bas à droite."
        ),
        "ann_played_r1c1": "{ann} a joué X en ligne 1, colonne 1. À vous de jouer.",
        "ann_played_r1c2": "{ann} a joué X en ligne 1, colonne 2. À vous de jouer.",
        "notice_title": "Partie {id} contre {ann}",
        "notice_body": "{ann} a joué. À vous de jouer.",
        "stale": (
            "La grille a changé depuis que vous l’avez vue. Voici la grille actuelle."
        ),
    },
    "de-DE": {
        "lang": "de",
        "dir": "ltr",
        "lobby": "Lobby",
        "opponent": "Anmeldename des Gegners",
        "side_x": "X (beginnt)",
        "start": "Spiel starten",
        "notify": "Benachrichtige mich, wenn ich am Zug bin",
        "notify_on": "An",
        "game": "Spiel {id}",
        "waiting_for_ann": "Warten auf {ann} (X).",
        "waiting_for_ben": "Warten auf {ben} (O).",
        "your_turn": "Du bist am Zug.",
        "title_your_turn": "● Du bist am Zug — ",
        "place_x_r1c1": "X in Zeile 1, Spalte 1 setzen",
        "place_x_r1c2": "X in Zeile 1, Spalte 2 setzen",
        "place_o_r2c3": "O in Zeile 2, Spalte 3 setzen",
        "x_r1c1": "X: Zeile 1, Spalte 1",
        "o_r3c3": "O: Zeile 3, Spalte 3",
        "keys_hint": (
            "Tipp: Mit den Tasten 1 bis 9 setzt du auf ein Feld, wie auf einer "
            "Telefontastatur: 1 ist oben links, 9 unten rechts."
        ),
        "ann_played_r1c1": "{ann} hat X in Zeile 1, Spalte 1 gesetzt. Du bist am Zug.",
        "ann_played_r1c2": "{ann} hat X in Zeile 1, Spalte 2 gesetzt. Du bist am Zug.",
        "notice_title": "Spiel {id} gegen {ann}",
        "notice_body": "{ann} hat gezogen. Du bist am Zug.",
        "stale": (
            "Das Spielfeld hat sich geändert, seit du es gesehen hast. "
            "Hier ist der aktuelle Stand."
        ),
    },
    "ar": {
        "lang": "ar",
        "dir": "rtl",
        "lobby": "الردهة",
        "opponent": "اسم مستخدم الخصم",
        "side_x": "X (يلعب أولًا)",
        "start": "بدء المباراة",
        "notify": "نبّهني عندما يحين دوري",
        "notify_on": "مفعّلة",
        "game": "المباراة {id}",
        "waiting_for_ann": "بانتظار {ann} (X).",
        "waiting_for_ben": "بانتظار {ben} (O).",
        "your_turn": "دورك.",
        "title_your_turn": "● دورك — ",
        "place_x_r1c1": "ضع X في الصف 1، العمود 1",
        "place_x_r1c2": "ضع X في الصف 1، العمود 2",
        "place_o_r2c3": "ضع O في الصف 2، العمود 3",
        "x_r1c1": "X: الصف 1، العمود 1",
        "o_r3c3": "O: الصف 3، العمود 3",
        "keys_hint": (
            "تلميح: المفاتيح من 1 إلى 9 تلعب في خانة، كما في لوحة مفاتيح الهاتف: "
            "1 أعلى اليسار، و9 أسفل اليمين."
        ),
        "ann_played_r1c1": "لعب {ann} X في الصف 1، العمود 1. دورك.",
        "ann_played_r1c2": "لعب {ann} X في الصف 1، العمود 2. دورك.",
        "notice_title": "المباراة {id} ضد {ann}",
        "notice_body": "لعب {ann} نقلته. دورك.",
        "stale": "تغيّرت اللوحة منذ أن رأيتها. هذه هي اللوحة الحالية.",
    },
}
# Each language's players have names of their own: one served app for the module.
NAMES = {"fr-FR": "fr", "de-DE": "de", "ar": "ar"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("languages")
    with serving(tmp_dir, "languages", workers=2, **PLAIN_HTTP) as app:
        yield app


def says(words: dict, key: str, **names) -> str:
    return words[key].format(**names)


def hidden_name(player: Player, row: int, col: int):
    """A taken cell's accessible name (its visually hidden text)."""
    return player.cell(row, col).locator(".visually-hidden")


def expect_language(page: Page, words: dict) -> None:
    html = page.locator("html")
    expect(html).to_have_attribute("lang", words["lang"])
    expect(html).to_have_attribute("dir", words["dir"])


@pytest.mark.parametrize("locale", list(WORDS))
def test_a_game_in_the_browsers_language(people, axe_source, locale):
    words = WORDS[locale]
    ann, ben = people(f"ann{NAMES[locale]}", f"ben{NAMES[locale]}", locale=locale)
    names = {"ann": ann.username, "ben": ben.username}

    # The lobby, its notify control (its state is notify.js's, in the page's words).
    lobby = ben.page
    lobby.goto("/")
    expect_language(lobby, words)
    heading = lobby.get_by_role("heading", name=words["lobby"], exact=True)
    expect(heading).to_be_visible()
    lobby.get_by_role("button", name=words["notify"], exact=True).click()
    expect(lobby.locator("#notify-state")).to_have_text(words["notify_on"])
    assert blocking_violations(lobby, axe_source) == []

    # ann starts the game with the lobby's form, found by its words (the
    # opponent's label ends in Django's label suffix, itself translated).
    page = ann.page
    page.goto("/")
    page.get_by_label(words["opponent"]).fill(ben.username)
    page.get_by_role("radio", name=words["side_x"], exact=True).check()
    page.get_by_role("button", name=words["start"], exact=True).click()
    page.wait_for_url(GAME_URL)
    game_id = ann.game_id
    names["id"] = game_id

    ben.open_game(game_id)
    expect_language(ben.page, words)
    expect(ben.page.get_by_role("heading", level=1)).to_have_text(
        says(words, "game", **names)
    )
    expect(ben.turn).to_have_text(says(words, "waiting_for_ann", **names))
    announcer = ben.page.locator("#live-announcer")
    expect(announcer).to_have_text("")

    # ann's move, by the button's name; ben's page says it, and ben plays by key.
    page.get_by_role("button", name=words["place_x_r1c1"], exact=True).click()
    expect(ann.cell(0, 0).locator(".mark")).to_have_text("X")
    expect(ann.turn).to_have_text(says(words, "waiting_for_ben", **names))
    expect(announcer).to_have_text(says(words, "ann_played_r1c1", **names))
    expect(ben.turn).to_have_text(words["your_turn"])
    your_turn_title = re.compile("^" + re.escape(words["title_your_turn"]))
    expect(ben.page).to_have_title(your_turn_title)
    expect(ben.page.get_by_text(words["keys_hint"], exact=True)).to_be_visible()
    expect(hidden_name(ben, 0, 0)).to_have_text(words["x_r1c1"])
    ben.page.keyboard.press("9")  # the keypad's 9: bottom right, in every language
    expect(ben.cell(2, 2).locator(".mark")).to_have_text("O")
    expect(hidden_name(ben, 2, 2)).to_have_text(words["o_r3c3"])
    # Row 1, column 1 is the top-left cell, right-to-left or not.
    top_left = ben.cell(0, 0).bounding_box()
    bottom_right = ben.cell(2, 2).bounding_box()
    assert top_left["x"] < bottom_right["x"]
    assert top_left["y"] < bottom_right["y"]

    # ben's page hidden: the next move is announced and notified.
    ben.page.evaluate("window.hidePage()")
    page.get_by_role("button", name=words["place_x_r1c2"], exact=True).click()
    expect(announcer).to_have_text(says(words, "ann_played_r1c2", **names))
    # A function, not an expression: Playwright evaluates an expression again
    # with eval() while it polls, which the page's CSP refuses.
    ben.page.wait_for_function("() => window.shownNotifications.length > 0")
    assert ben.page.evaluate(NOTIFICATIONS) == [
        [
            says(words, "notice_title", **names),
            says(words, "notice_body", **names),
            f"game-{game_id}",
        ]
    ]

    # A second tab without live updates still offers the cells; ben moves in
    # the first, then clicks in the second: refused, in words.
    stale = ben.page.context.new_page()
    stale.add_init_script("delete window.EventSource")
    stale.goto(f"/games/{game_id}/")
    button = stale.get_by_role("button", name=words["place_o_r2c3"], exact=True)
    expect(button).to_be_visible()
    ben.page.keyboard.press("7")
    expect(ben.cell(2, 0).locator(".mark")).to_have_text("O")
    with stale.expect_response(re.compile(r"/move/$")) as refused:
        button.click()
    assert refused.value.status == 409
    expect_language(stale, words)
    expect(stale.get_by_role("alert")).to_have_text(words["stale"])
    assert blocking_violations(stale, axe_source) == []
