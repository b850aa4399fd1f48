"""Game pages and the lobby come from a per-process cache (games.page_cache):
what a viewer sees is still exactly what a fresh render shows, and each response
carries its own CSRF token."""

import re
import time
from datetime import timedelta

import pytest
from django.db.models import Count, Max, Q, Sum
from django.test import Client
from django.utils import timezone

from accounts import services as account_services
from games import services
from games.models import Game

from ..conftest import PASSWORD
from .test_views_game import buttons, move, text

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


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
    # nine cells, forfeit, abort, private, log out, language
    assert len(tokens[0]) == 14
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
    account_services.close_account(user=bob)
    game.refresh_from_db()
    # Still running, a new version (who may act changed), the same board.
    assert (game.status, game.version, game.board) == ("in_progress", 4, "X---O----")
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


# -- the lobby ----------------------------------------------------------------


@pytest.fixture(params=["/", "/lobby/live/"], ids=["page", "lists"])
def lobby_path(request) -> str:
    return request.param


def lobby(client, path="/") -> str:
    response = client.get(path)
    assert response.status_code == 200
    return text(response)


@pytest.fixture
def cached(django_assert_num_queries):
    """The lobby part at `path` rendered afresh, then served from the cache: its
    text. A rendering that was not due (the key did not change) fails it."""

    def fetch(client, path) -> str:
        # user, version; then your games, open games, finished games (the
        # session comes from its own cache)
        with django_assert_num_queries(5):
            rendered = lobby(client, path)
        with django_assert_num_queries(2):  # user, version
            served = lobby(client, path)
        assert TOKEN.sub("", served) == TOKEN.sub("", rendered)
        return served

    return fetch


def test_the_opponents_move_shows_in_the_lobby(
    client_for, game, alice, bob, play, lobby_path, cached
):
    play(game, (0, 0), (1, 1))  # alice (X) to move
    as_bob = client_for(bob)
    assert "Waiting for alice (X)." in cached(as_bob, lobby_path)
    assert move(client_for(alice), game, 0, 1).status_code == 302
    after = cached(as_bob, lobby_path)
    assert "Your turn." in after
    assert "Waiting for alice (X)." not in after


def test_a_new_game_against_you_shows_in_the_lobby(
    client_for, alice, carol, lobby_path, cached
):
    as_alice = client_for(alice)
    assert "No games in progress." in cached(as_alice, lobby_path)
    started = client_for(carol).post("/games/new/", {"opponent": "alice", "side": "x"})
    assert started.status_code == 302
    after = cached(as_alice, lobby_path)
    assert "carol started a game against you." in after
    assert "No games in progress." not in after


def test_an_opponent_joining_your_open_game_shows_in_the_lobby(
    client_for, alice, bob, lobby_path, cached
):
    game = services.create_game(creator=alice, side="x")
    as_alice = client_for(alice)
    before = cached(as_alice, lobby_path)
    assert "Waiting for an opponent to join." in before
    assert client_for(bob).post(f"/games/{game.pk}/join/").status_code == 302
    after = cached(as_alice, lobby_path)
    assert '<a href="/players/bob/">bob</a> (O)' in after
    assert "Your turn." in after
    assert "Waiting for an opponent to join." not in after


def test_someone_elses_new_open_game_shows_in_the_lobby(
    client_for, alice, bob, lobby_path, cached
):
    as_alice = client_for(alice)
    assert "No open games right now." in cached(as_alice, lobby_path)
    opened = client_for(bob).post("/games/new/", {"opponent": "", "side": "x"})
    assert opened.status_code == 302
    game = Game.objects.get(created_by=bob)
    after = cached(as_alice, lobby_path)
    assert f'Game {game.pk} by <a href="/players/bob/">bob</a> (plays X)' in after
    assert f"Join game {game.pk}" in after


def test_an_open_game_joined_by_someone_else_leaves_the_lobby(
    client_for, alice, bob, carol, lobby_path, cached
):
    game = services.create_game(creator=bob, side="x")
    as_alice = client_for(alice)
    assert f"Join game {game.pk}" in cached(as_alice, lobby_path)
    assert client_for(carol).post(f"/games/{game.pk}/join/").status_code == 302
    after = cached(as_alice, lobby_path)
    assert f"Join game {game.pk}" not in after
    assert "No open games right now." in after


def test_a_won_game_moves_to_finished_in_the_lobby(
    client_for, game, alice, play, lobby_path, cached
):
    play(game, (0, 0), (1, 0), (0, 1), (1, 1))  # alice (X) wins with (0, 2)
    as_alice = client_for(alice)
    before = cached(as_alice, lobby_path)
    assert "Your turn." in before
    assert "No finished games yet." in before
    assert move(as_alice, game, 0, 2).status_code == 302
    after = cached(as_alice, lobby_path)
    assert "You win!" in after
    assert "No games in progress." in after


def test_an_aborted_game_moves_to_finished_in_the_lobby(
    client_for, game, alice, bob, lobby_path, cached
):
    as_alice = client_for(alice)
    assert "Your turn." in cached(as_alice, lobby_path)
    assert client_for(bob).post(f"/games/{game.pk}/abort/").status_code == 302
    after = cached(as_alice, lobby_path)
    assert "Aborted by bob." in after
    assert "No games in progress." in after


def test_a_deleted_game_leaves_the_lobby(client_for, alice, bob, lobby_path, cached):
    older, newer = (
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )
        for _ in range(2)
    )
    as_alice = client_for(alice)
    before = cached(as_alice, lobby_path)
    assert f">Game {older.pk}<" in before
    assert f">Game {newer.pk}<" in before
    # The older game: the latest updated_at of alice's games stays the same.
    assert services.delete_games(game_ids=[older.pk]) == 1
    after = cached(as_alice, lobby_path)
    assert f">Game {older.pk}<" not in after
    assert f">Game {newer.pk}<" in after


def test_an_opponent_who_closed_their_account_shows_in_the_lobby(
    client_for, game, alice, bob, play, lobby_path, cached
):
    play(game, (0, 0), (1, 1))  # alice (X) to move: closing leaves this game be
    as_alice = client_for(alice)
    assert '<a href="/players/bob/">bob</a> (O)' in cached(as_alice, lobby_path)
    account_services.close_account(user=bob)
    after = cached(as_alice, lobby_path)
    assert '<a href="/players/bob/">bob (closed)</a> (O)' in after
    assert "Your turn. bob has left: they closed their account." in after


def test_an_opponent_who_closed_their_account_shows_in_finished_games(
    client_for, game, alice, bob, lobby_path, cached
):
    services.forfeit(game_id=game.pk, user=alice)  # bob has no unfinished game
    as_alice = client_for(alice)
    assert "bob (O) wins: alice (X) forfeited." in cached(as_alice, lobby_path)
    account_services.close_account(user=bob)
    after = cached(as_alice, lobby_path)
    assert "bob (closed) (O) wins: alice (X) forfeited." in after


def test_each_user_gets_their_own_lobby(client_for, game, alice, bob, lobby_path):
    """alice and bob see the same games (the same version): only the key's
    viewer tells their lobbies apart."""
    as_alice, as_bob = client_for(alice), client_for(bob)
    for _ in range(2):
        alices, bobs = lobby(as_alice, lobby_path), lobby(as_bob, lobby_path)
        assert "Your turn." in alices
        assert "started a game against you." not in alices
        assert "alice started a game against you." in bobs
        assert "Your turn." not in bobs
    if lobby_path == "/":
        assert "Signed in as <strong>alice</strong>" in alices
        assert "Signed in as <strong>bob</strong>" in bobs


def test_every_lobby_response_has_its_own_csrf_token_and_it_works(
    csrf_client, alice, bob, carol
):
    open_game = services.create_game(creator=bob)
    as_alice = csrf_client(alice)
    first, second = lobby(as_alice), lobby(as_alice)
    tokens = TOKEN.findall(first), TOKEN.findall(second)
    assert len(tokens[0]) == 4  # new game, join game, log out, language
    assert len(set(tokens[0])) == 1
    assert tokens[0][0] != tokens[1][0]  # masked afresh per request
    assert "\x00" not in second
    started = as_alice.post(
        "/games/new/",
        {"opponent": "bob", "side": "x", "csrfmiddlewaretoken": tokens[1][0]},
    )
    assert started.status_code == 302
    # Another session is served the same cached lists with its own token: the
    # first session's token is refused there, its own is accepted.
    as_carol = csrf_client(carol)
    lobby(as_carol, "/lobby/live/")
    carols = TOKEN.findall(lobby(as_carol, "/lobby/live/"))
    assert len(carols) == 1  # join game
    join = f"/games/{open_game.pk}/join/"
    refused = as_carol.post(join, {"csrfmiddlewaretoken": tokens[1][0]})
    assert refused.status_code == 403
    assert as_carol.post(join, {"csrfmiddlewaretoken": carols[0]}).status_code == 302
    open_game.refresh_from_db()
    assert open_game.player_o_id == carol.pk


def test_a_lobby_with_a_message_is_not_cached(db, django_assert_num_queries):
    client = Client()
    signed_up = client.post(
        "/accounts/signup/",
        {"username": "dora", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert signed_up.status_code == 302
    assert "Successfully signed in as dora." in lobby(client)
    with django_assert_num_queries(5):  # rendered: the welcome was not kept
        again = lobby(client)
    assert "Successfully signed in as dora." not in again
    assert "Signed in as <strong>dora</strong>" in again


@pytest.mark.parametrize(
    ("data", "status", "reason"),
    [
        (
            {"opponent": "nobody", "side": "x"},
            400,
            "There is no player called “nobody”.",
        ),
        ({"opponent": "", "side": "x"}, 429, "You already have 1 open game waiting"),
    ],
    ids=["unknown opponent", "too many open games"],
)
def test_a_refused_new_game_is_not_cached(
    client_for, alice, settings, data, status, reason, django_assert_num_queries
):
    settings.GAMES_MAX_OPEN_PER_USER = 1
    services.create_game(creator=alice)
    as_alice = client_for(alice)
    refused = as_alice.post("/games/new/", data)
    assert refused.status_code == status
    assert reason in text(refused)
    with django_assert_num_queries(5):  # rendered: the refusal was not kept
        page = lobby(as_alice)
    assert reason not in page
    assert (
        '<input type="text" name="opponent" autocomplete="off" maxlength="150" '
        'aria-describedby="id_opponent_helptext" id="id_opponent">'
    ) in page


def test_a_cached_lobby_lives_sixty_seconds(client_for, game, alice, bob, monkeypatch):
    """Staff renaming a player in the admin changes no game, so not the lobby's
    key: the entry's lifetime bounds how long others see the old name."""
    start = time.time()
    monkeypatch.setattr(time, "time", lambda: start)
    as_alice = client_for(alice)
    assert '<a href="/players/bob/">bob</a> (O)' in lobby(as_alice)
    bob.username = "robert"
    bob.save(update_fields=["username"])
    monkeypatch.setattr(time, "time", lambda: start + 59)
    assert '<a href="/players/bob/">bob</a> (O)' in lobby(as_alice)
    monkeypatch.setattr(time, "time", lambda: start + 61)
    assert '<a href="/players/robert/">robert</a> (O)' in lobby(as_alice)


def test_an_open_game_leaving_as_an_older_one_arrives_shows_in_the_lobby(
    client_for, alice, bob, carol, make_user, lobby_path, cached, monkeypatch
):
    """One open game leaves the list and another arrives with an earlier
    updated_at (transactions that commit out of timestamp order, or the clocks of
    several hosts): the count, the newest updated_at and the sum of versions are
    as before, and the key must move all the same."""
    dave = make_user("dave")
    leaving = services.create_game(creator=bob)
    services.create_game(creator=alice, opponent=carol)  # the newest updated_at
    as_alice = client_for(alice)
    assert f"Join game {leaving.pk}" in cached(as_alice, lobby_path)
    before = _old_lobby_key(alice), Game.objects.lobby_version(alice)

    services.join_game(game_id=leaving.pk, user=carol)  # no longer open
    behind = timezone.now() - timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: behind)  # another host's clock
    arrived = services.create_game(creator=dave)
    monkeypatch.undo()

    assert _old_lobby_key(alice) == before[0]  # the collision, built exactly
    assert Game.objects.lobby_version(alice) != before[1]
    after = cached(as_alice, lobby_path)
    assert f"Join game {arrived.pk}" in after
    assert f"Join game {leaving.pk}" not in after


def _old_lobby_key(user) -> tuple:
    """The lobby's key as it was: newest updated_at, count, sum of versions."""
    return tuple(
        Game.objects.filter(Q(player_x=user) | Q(player_o=user) | Q(status="waiting"))
        .aggregate(Max("updated_at"), Count("id"), Sum("version"))
        .values()
    )
