"""Game pages come from a per-process cache (games.page_cache): what a viewer
sees is still exactly what a fresh render shows, and each response carries its
own CSRF token."""

import re

import pytest
from django.core.cache import caches
from django.test import Client

from games import services

from .test_views import buttons, move, text

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(autouse=True)
def empty_cache():
    caches["pages"].clear()
    yield
    caches["pages"].clear()


@pytest.fixture
def csrf_client(client_for):
    def make(user) -> Client:
        return client_for(user, enforce_csrf_checks=True)

    return make


def page(client, game):
    response = client.get(f"/games/{game.pk}/")
    assert response.status_code == 200
    return response


def test_the_next_move_shows_on_a_cached_page(client_for, game, alice, bob):
    as_bob = client_for(bob)
    page(as_bob, game)  # cached: X to move, bob waits
    assert move(client_for(alice), game, 1, 1).status_code == 302
    after = page(as_bob, game)
    assert "Your turn." in text(after)
    assert buttons(after) == {(r, c) for r in range(3) for c in range(3)} - {(1, 1)}


def test_each_viewer_gets_their_own_page(client_for, game, alice, bob, carol):
    page(client_for(alice), game)  # alice's page, with the cell buttons, cached
    as_carol = page(client_for(carol), game)
    assert buttons(as_carol) == set()
    assert "Signed in as <strong>carol</strong>" in text(as_carol)
    assert "Waiting for alice (X)." in text(as_carol)


def test_every_response_has_its_own_csrf_token_and_it_works(csrf_client, game, alice):
    as_alice = csrf_client(alice)
    first, second = page(as_alice, game), page(as_alice, game)
    tokens = TOKEN.findall(text(first)), TOKEN.findall(text(second))
    assert len(tokens[0]) == 12  # nine cells, forfeit, abort and log out
    assert len(set(tokens[0])) == 1
    assert tokens[0][0] != tokens[1][0]  # masked afresh per request
    assert "\x00" not in text(second)
    response = as_alice.post(
        f"/games/{game.pk}/move/",
        {"row": 0, "col": 0, "ply": 0, "csrfmiddlewaretoken": tokens[1][0]},
    )
    assert response.status_code == 302
    assert game.moves.count() == 1


def test_a_series_score_from_another_game_shows(client_for, alice, bob, play):
    first = services.create_game(creator=alice, opponent=bob)
    play(first, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))  # alice wins
    as_bob = client_for(bob)
    assert "Series: alice 1 – 0 bob" in text(page(as_bob, first))
    second = services.create_game(creator=bob, opponent=alice)
    services.forfeit(game_id=second.pk, user=bob)  # X (bob) gives up: alice wins
    assert "Series: alice 2 – 0 bob" in text(page(as_bob, first))


def test_a_renamed_player_shows(client_for, game, alice, bob):
    as_bob = client_for(bob)
    assert "alice" in text(page(as_bob, game))
    alice.username = "alicia"
    alice.save()
    assert "Waiting for alicia (X)." in text(page(as_bob, game))


def test_a_flash_message_is_shown_once(client_for, alice, bob):
    game = services.create_game(creator=alice)
    as_bob = client_for(bob)
    response = as_bob.post(f"/games/{game.pk}/join/", follow=True)
    assert "You joined the game." in text(response)
    assert "You joined the game." not in text(page(as_bob, game))


def test_a_player_who_closed_their_account_shows_on_a_cached_page(
    client_for, game, alice, bob, carol, play
):
    play(game, (0, 0), (1, 1))  # alice (X) to move: closing leaves this game be
    as_carol = client_for(carol)
    assert "bob (closed)" not in text(page(as_carol, game))
    services.close_account(user=bob)
    game.refresh_from_db()
    assert game.version == 3  # the game itself did not change
    shown = text(page(as_carol, game))
    assert "bob (closed)" in shown
    assert "bob has left: they closed their account." in shown


def test_spectators_share_one_live_part_players_have_their_own(
    client_for, game, alice, bob, carol, make_user, monkeypatch
):
    from games import page_cache

    rendered = []
    render = page_cache.render_to_string

    def counting(template_name, context, request):
        rendered.append(template_name)
        return render(template_name, context, request)

    monkeypatch.setattr(page_cache, "render_to_string", counting)
    viewers = [carol, make_user("dave"), alice, bob]
    parts = [client_for(user).get(f"/games/{game.pk}/live/") for user in viewers]
    assert [part.status_code for part in parts] == [200] * 4
    assert len(rendered) == 3  # the spectators' part, alice's, bob's
    assert text(parts[0]) == text(parts[1])
    assert "Waiting for alice (X)." in text(parts[0])
    assert "Your turn." in text(parts[2])
    assert "Waiting for alice (X)." in text(parts[3])
    assert buttons(parts[3]) == set()
