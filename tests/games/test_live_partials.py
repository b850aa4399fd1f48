"""The live partials (/games/<id>/live/, /lobby/live/), what the page fetches
when its stream announces a change: who gets the buttons, the rematch link, the
status codes and query counts; and the game page's live script, with a refresh
for browsers without JavaScript.
"""

import pytest
from django.urls import reverse

from games import services


@pytest.mark.django_db
def test_live_partial_for_the_player_to_move_has_the_buttons(
    game, alice, client_for, django_assert_num_queries
):
    client = client_for(alice)
    with django_assert_num_queries(2):  # user, game (players, series joined)
        response = client.get(reverse("game_live", args=[game.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert "<html" not in html
    assert html.count('class="cell-button"') == 9
    assert f'data-version="{game.version}"' in html
    assert 'data-title="● Your turn — Game' in html


@pytest.mark.django_db
def test_live_partial_for_the_waiting_player_and_a_spectator_has_no_buttons(
    game, bob, carol, client_for
):
    for user in (bob, carol):
        response = client_for(user).get(reverse("game_live", args=[game.pk]))
        html = response.content.decode()
        assert response.status_code == 200
        assert "cell-button" not in html
        assert "Waiting for alice (X)." in html
        assert 'data-title="Game' in html


@pytest.mark.django_db
def test_live_partial_of_a_finished_game_links_to_its_rematch(
    game, bob, carol, client_for, play
):
    game = play(game, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    rematch = services.rematch(game_id=game.pk, user=bob)
    html = client_for(carol).get(reverse("game_live", args=[game.pk])).content.decode()
    assert f'href="/games/{rematch.pk}/"' in html
    assert f"Watch the rematch (game {rematch.pk})" in html
    assert 'data-title="alice (X) wins! — Game' in html
    html = client_for(bob).get(reverse("game_live", args=[game.pk])).content.decode()
    assert f"Go to the rematch (game {rematch.pk})" in html


@pytest.mark.django_db
def test_live_partial_status_codes(game, alice, bob, client, client_for):
    # A started game's is public (tests/games/test_public_games.py); not yet, login.
    url = reverse("game_live", args=[services.create_game(creator=alice).pk])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={url}"
    assert client_for(bob).get(reverse("game_live", args=[999999])).status_code == 404
    response = client_for(bob).post(url)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_lobby_live_partial_lists_games_without_the_form(
    game, alice, client_for, django_assert_num_queries
):
    client = client_for(alice)
    # user, the lobby's version; rendered: active, open, finished
    with django_assert_num_queries(5):
        response = client.get(reverse("lobby_live"))
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        f'<a href="/games/{game.pk}/">Game {game.pk}</a>: '
        '<a href="/players/alice/">alice</a> (X) vs '
        '<a href="/players/bob/">bob</a> (O)'
    ) in html
    assert "Your turn." in html
    assert 'name="opponent"' not in html


@pytest.mark.django_db
def test_game_page_loads_the_live_script_and_refreshes_without_it(
    game, alice, bob, client_for
):
    waiting = client_for(bob).get(reverse("game_detail", args=[game.pk]))
    html = waiting.content.decode()
    assert '<script src="/static/games/live.js" defer></script>' in html
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in html
    assert f'data-events="/games/{game.pk}/events/"' in html
    moving = client_for(alice).get(reverse("game_detail", args=[game.pk]))
    assert "http-equiv" not in moving.content.decode()
    assert "<title>● Your turn — Game" in moving.content.decode()
