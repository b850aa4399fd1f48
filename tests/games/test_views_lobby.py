"""The lobby's lists: your games (your turn first, new challenges with Play
and Abort), open games and your latest finished games."""

import re

from games import services
from games.models import Game, PlayerResult

from .test_views_game import text


def test_lobby_lists_your_turn_first_and_results(as_alice, alice, bob, carol, play):
    waiting_on_bob = services.create_game(creator=alice, opponent=bob)
    services.play_move(game_id=waiting_on_bob.pk, user=alice, row=0, col=0)
    my_turn = services.create_game(creator=carol, opponent=alice, side="x")
    play(my_turn, (0, 0), (1, 1), (0, 1))
    finished = services.create_game(creator=alice, opponent=carol)
    services.forfeit(game_id=finished.pk, user=alice)
    page = text(as_alice.get("/"))
    # Each game links to its page, each username to the player page.
    assert page.index(f">Game {my_turn.pk}<") < page.index(
        f">Game {waiting_on_bob.pk}<"
    )
    assert f'<a href="/games/{my_turn.pk}/">Game {my_turn.pk}</a>' in page
    assert '<a href="/players/carol/">carol</a> (X)' in page
    assert "Your turn." in page
    assert "Waiting for bob (O)." in page
    assert "carol (O) wins: alice (X) forfeited." in page
    assert "started a game against you" not in page


def test_lobby_marks_new_games_with_play_and_abort(
    as_alice, as_bob, alice, bob, carol, play
):
    new = services.create_game(creator=carol, opponent=alice, side="x")
    services.play_move(game_id=new.pk, user=carol, row=0, col=0)
    new_as_x = services.create_game(creator=bob, opponent=alice, side="o")
    answered = services.create_game(creator=bob, opponent=alice, side="o")
    play(answered, (1, 1))
    own = services.create_game(creator=alice, opponent=bob, side="o")
    page = text(as_alice.get("/"))
    # Counted in the lines shown (the notification's data-notice-body says it too).
    assert page.count("started a game against you.</span>") == 2
    assert "carol started a game against you." in page
    assert "bob started a game against you." in page
    for game in (new, new_as_x):
        assert f'href="/games/{game.pk}/">Play game {game.pk}</a>' in page
        assert f'action="/games/{game.pk}/abort/"' in page
    # New games come first, after none of alice's turns (there are none here).
    assert page.index(f">Game {new_as_x.pk}<") < page.index(f">Game {answered.pk}<")
    for game in (answered, own):
        assert f"Play game {game.pk}" not in page
        assert f'action="/games/{game.pk}/abort/"' not in page
    # bob started `own`? No: alice did, so for bob it is new (he is X, unmoved).
    assert f"Play game {own.pk}" in text(as_bob.get("/"))
    assert "alice started a game against you." in text(as_bob.get("/"))

    response = as_alice.post(f"/games/{new.pk}/abort/")
    assert response.status_code == 302
    assert Game.objects.get(pk=new.pk).status == "aborted"
    assert "carol started a game against you." not in text(as_alice.get("/"))


def test_lobby_continues_finished_games_in_the_archive(as_alice, alice, bob):
    for _ in range(25):
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )
    oldest_shown = PlayerResult.objects.filter(player=alice).order_by("-id")[19]
    first = text(as_alice.get("/"))
    assert first.count("forfeited.") == 20
    older = f'href="/games/archive/?before={oldest_shown.pk}" rel="next"'
    assert older in first
    rest = as_alice.get(f"/games/archive/?before={oldest_shown.pk}")
    assert rest.status_code == 200
    assert len(rest.context["results"]) == 5
    # The lobby has one scheme: no ?page= offsets of its own.
    assert "?page=" not in first


def test_lobby_links_are_those_of_every_other_page(client_for, alice, make_user):
    """The lobby reverses its links as the other pages do: a name with "+" and
    "@" links to the same address from the lobby and the game page, and every
    link of the lists leads to a page."""
    dan = make_user("dan+1@x.y")
    new = services.create_game(creator=dan, opponent=alice)  # alice's Play, Abort
    open_game = services.create_game(creator=dan)
    finished = services.create_game(creator=alice, opponent=dan)
    services.forfeit(game_id=finished.pk, user=alice)
    as_alice = client_for(alice)
    lists = text(as_alice.get("/lobby/live/"))
    link = '<a href="/players/dan+1@x.y/">dan+1@x.y</a>'
    assert lists.count(link) == 3  # X of the new game, the open game, O of the finished
    assert f'{link} (X) vs <a href="/players/alice/">alice</a> (O)' in lists
    assert f"Game {open_game.pk} by {link} (plays X)" in lists
    assert f'data-notice-url="/games/{new.pk}/"' in lists
    assert f'<a class="button small primary" href="/games/{new.pk}/">' in lists
    assert f'action="/games/{new.pk}/abort/"' in lists
    assert f'action="/games/{open_game.pk}/join/"' in lists
    assert link in text(as_alice.get(f"/games/{new.pk}/"))
    hrefs = set(re.findall(r'href="([^"]+)"', lists))
    assert hrefs == {
        f"/games/{new.pk}/",
        f"/games/{finished.pk}/",
        "/players/dan+1@x.y/",
        "/players/alice/",
        "/games/archive/",
    }
    for href in hrefs:
        assert as_alice.get(href).status_code == 200, href
