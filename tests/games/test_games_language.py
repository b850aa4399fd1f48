"""The games part in the reader's language (issue 37): the game page, its live
part, the lobby's lists and a refusal use the active language's words, and the
page cache never serves one language's page to another.

The expected French is the shipped catalog's (games/locale/fr and
tictactoe_site/locale/fr), written out here: the words are marked, looked up at
request time in the request's language, and cached per language.
"""

from django.utils import translation
from django.utils.functional import Promise

from games import forms, guest_views, player_stats
from games.models import GameStatus, ResultOutcome
from tictactoe_site.lib import error_pages


def fr(client, url):
    return client.get(url, HTTP_ACCEPT_LANGUAGE="fr").content.decode()


def en(client, url):
    return client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()


def test_the_game_page_in_french_and_in_english(client_for, game, bob, play):
    play(game, (0, 2))
    as_bob = client_for(bob)
    url = f"/games/{game.pk}/"
    page = fr(as_bob, url)
    assert '<h2 id="moves-heading">Coups</h2>' in page
    assert "À vous de jouer." in page
    assert "<li>1. X\u00a0: ligne 1, colonne 3</li>" in page
    assert '<span class="visually-hidden">X\u00a0: ligne 1, colonne 3</span>' in page
    assert 'data-state-on="Activées"' in page  # notify.js's words
    # The same page in English is another page of the cache, and back again.
    english = en(as_bob, url)
    assert '<h2 id="moves-heading">Moves</h2>' in english
    assert "Your turn." in english
    assert "<li>1. X: row 1, column 3</li>" in english
    assert "Coups" not in english
    assert "Your turn." not in fr(as_bob, url)


def test_the_live_part_and_the_lobby_lists_in_french(client_for, game, bob, play):
    play(game, (0, 2))
    as_bob = client_for(bob)
    live = fr(as_bob, f"/games/{game.pk}/live/")
    assert "Coups" in live
    assert "À vous de jouer." in live
    assert 'data-announce="alice a joué X en ligne 1, colonne 3.' in live
    assert "Vos parties" in fr(as_bob, "/lobby/live/")
    assert "Your games" in en(as_bob, "/lobby/live/")


def test_a_refusal_of_the_rules_in_french(client_for, game, bob):
    refused = client_for(bob).post(
        f"/games/{game.pk}/move/",
        {"row": 0, "col": 0, "ply": 0},
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    assert refused.status_code == 403
    assert '<p class="alert" role="alert">Ce n’est pas votre tour.</p>' in (
        refused.content.decode()
    )


def test_words_kept_at_module_level_are_lazy():
    """Imported long before any request: they must be translated when shown."""
    for words in (
        forms.CELL_ERROR,
        forms.PLY_ERROR,
        guest_views.JOINED,
        error_pages.GAME_BUTTONS_HINT,
        player_stats.RESULT_FILTERS["won"][0],
        GameStatus.DRAW.label,
        ResultOutcome.WIN.label,
    ):
        assert isinstance(words, Promise), words
    with translation.override("fr"):
        assert forms.ArchiveForm()["result"].label == "Résultat"
    with translation.override("en"):
        assert forms.ArchiveForm()["result"].label == "Result"
