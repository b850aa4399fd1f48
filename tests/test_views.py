"""Browser play through the HTTP routes only (Django's test client)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from games import services
from games.models import Game, Move, PlayerResult

from .conftest import PASSWORD, snapshot_tables

CELL_BUTTON = re.compile(
    r'<input type="hidden" name="row" value="(\d)">\s*'
    r'<input type="hidden" name="col" value="(\d)">\s*'
    r'<input type="hidden" name="ply" value="(\d)">\s*'
    r'<button type="submit" class="cell-button"'
)


def buttons(response) -> set[tuple[int, int]]:
    """The cells that are POST buttons on a rendered game page."""
    return {
        (int(row), int(col))
        for row, col, _ in CELL_BUTTON.findall(response.content.decode())
    }


def move(client, game, row, col, **extra):
    return client.post(f"/games/{game.pk}/move/", {"row": row, "col": col, **extra})


def text(response) -> str:
    return response.content.decode()


# -- accounts -------------------------------------------------------------


def test_signup_logs_in_and_lands_in_the_lobby(db):
    client = Client()
    response = client.post(
        "/accounts/signup/",
        {"username": "dora", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    lobby = client.get("/")
    assert lobby.status_code == 200
    assert "Signed in as <strong>dora</strong>" in text(lobby)
    assert "Successfully signed in as dora." in text(lobby)


def test_signup_rejects_mismatched_passwords_and_taken_names(alice):
    client = Client()
    response = client.post(
        "/accounts/signup/",
        {"username": "alice", "password1": PASSWORD, "password2": PASSWORD + "x"},
    )
    assert response.status_code == 400
    assert "A user with that username already exists." in text(response)
    assert "You must type the same password each time." in text(response)
    assert get_user_model().objects.count() == 1


def test_signup_follows_only_local_next(db):
    client = Client()
    data = {"username": "erin", "password1": PASSWORD, "password2": PASSWORD}
    response = client.post("/accounts/signup/?next=https://evil.example/", data)
    assert response["Location"] == "/"
    other = Client()
    data["username"] = "fay"
    response = other.post("/accounts/signup/?next=/games/archive/", data)
    assert response["Location"] == "/games/archive/"


def test_login_and_logout(alice):
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    response = client.post("/accounts/login/", {"login": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405  # POST only
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/")["Location"] == "/accounts/login/?next=/"


def test_wrong_password_is_refused(alice):
    response = Client().post("/accounts/login/", {"login": "alice", "password": "nope"})
    assert response.status_code == 400
    assert "The username and/or password you specified are not correct." in text(
        response
    )


# -- creating and joining -------------------------------------------------


@pytest.mark.parametrize(
    ("side", "x_name"), [("x", "alice"), ("o", "bob"), ("", "alice")]
)
def test_create_against_a_named_opponent(as_alice, bob, side, x_name):
    response = as_alice.post("/games/new/", {"opponent": "bob", "side": side})
    game = Game.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    assert game.player_x.username == x_name
    assert {game.player_x.username, game.player_o.username} == {"alice", "bob"}
    assert game.status == "in_progress"


def test_create_with_random_side(as_alice, bob, settings):
    settings.GAMES_MAX_UNSTARTED_PER_USER = 30
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 30
    for _ in range(30):
        assert (
            as_alice.post(
                "/games/new/", {"opponent": "bob", "side": "random"}
            ).status_code
            == 302
        )
    x_players = set(Game.objects.values_list("player_x__username", flat=True))
    assert x_players == {"alice", "bob"}


def test_create_open_game_and_join_it(as_alice, as_bob, alice, bob):
    response = as_alice.post("/games/new/", {"opponent": "", "side": "o"})
    game = Game.objects.get()
    assert response.status_code == 302
    assert game.status == "waiting"
    page = as_alice.get(f"/games/{game.pk}/")
    assert "Waiting for an opponent to join" in text(page)
    assert buttons(page) == set()

    invite = as_bob.get(f"/games/{game.pk}/")
    assert "Join this game" in text(invite)
    assert f"Join game {game.pk}" in text(as_bob.get("/"))  # listed in the lobby
    joined = as_bob.post(f"/games/{game.pk}/join/")
    assert joined.status_code == 302
    game.refresh_from_db()
    assert (game.player_x, game.player_o, game.status) == (bob, alice, "in_progress")
    assert "You joined the game." in text(as_bob.get(joined["Location"]))


def test_create_self_play(as_alice, alice):
    as_alice.post("/games/new/", {"opponent": "alice", "side": "x"})
    game = Game.objects.get()
    assert game.player_x == game.player_o == alice
    url = f"/games/{game.pk}/"
    assert move(as_alice, game, 0, 0).status_code == 302
    page = as_alice.get(url)
    assert "Your turn (O)." in text(page)
    assert len(buttons(page)) == 8
    assert move(as_alice, game, 1, 1).status_code == 302
    assert Game.objects.get().board == "X---O----"


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"opponent": "nobody"}, 400, "There is no player called “nobody”."),
        ({"opponent": "bob", "side": "purple"}, 400, "Choose a side: x, o or random."),
        ({"opponent": "b" * 151}, 400, "at most 150 characters"),
    ],
)
def test_create_rejections(as_alice, bob, data, status, message):
    response = as_alice.post("/games/new/", data)
    assert response.status_code == status
    assert message in text(response)
    assert Game.objects.count() == 0


def test_open_game_limit_is_a_429_with_a_message(as_alice, settings):
    settings.GAMES_MAX_OPEN_PER_USER = 1
    assert as_alice.post("/games/new/", {}).status_code == 302
    response = as_alice.post("/games/new/", {})
    assert response.status_code == 429
    assert "You already have 1 open games waiting for players." in text(response)
    assert Game.objects.count() == 1


def test_join_rejections(as_alice, as_carol, game, alice):
    open_game = services.create_game(creator=alice)
    before = snapshot_tables()
    own = as_alice.post(f"/games/{open_game.pk}/join/")
    assert own.status_code == 409
    assert "You created this game: share its address" in text(own)
    full = as_carol.post(f"/games/{game.pk}/join/")
    assert full.status_code == 409
    assert "This game already has two players." in text(full)
    assert as_carol.post("/games/99999/join/").status_code == 404
    assert snapshot_tables() == before


# -- playing whole games --------------------------------------------------


def play_through_http(clients, game, cells):
    """Alternate X and O clients over `cells`, checking state.json after each."""
    for number, (row, col) in enumerate(cells):
        client = clients[number % 2]
        response = move(client, game, row, col, ply=number)
        assert response.status_code == 302, text(response)
        assert response["Location"] == f"/games/{game.pk}/"
        state = client.get(f"/games/{game.pk}/state.json").json()
        board = Game.objects.get(pk=game.pk).rules_board
        assert state["board"] == [
            [cell.value if cell else None for cell in row] for row in board.rows()
        ]
        assert state["ply"] == number + 1
        assert state["moves"][-1] == {
            "sequence_number": number + 1,
            "player": "XO"[number % 2],
            "row": row,
            "col": col,
        }
    game.refresh_from_db()
    return game


def test_x_wins(as_alice, as_bob, game):
    game = play_through_http(
        [as_alice, as_bob], game, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
    )
    assert game.status == "x_won"
    state = as_bob.get(f"/games/{game.pk}/state.json").json()
    assert state == state | {
        "status": "x_won",
        "winner": "X",
        "current_player": None,
        "winning_line": [[0, 0], [0, 1], [0, 2]],
        "player_x": "alice",
        "player_o": "bob",
    }
    page = as_bob.get(f"/games/{game.pk}/")
    assert "alice (X) wins!" in text(page)
    assert "You win!" in text(as_alice.get(f"/games/{game.pk}/"))
    assert text(page).count("cell cell-win") == 3
    assert buttons(page) == set()
    assert "Rematch (sides swapped)" in text(page)
    assert "1. X (0, 0)" in text(page)
    assert "5. X (0, 2)" in text(page)


def test_o_wins(as_alice, as_bob, game):
    game = play_through_http(
        [as_alice, as_bob], game, [(0, 0), (0, 2), (1, 0), (1, 1), (2, 2), (2, 0)]
    )
    assert (game.status, game.winning_cells) == ("o_won", [(0, 2), (1, 1), (2, 0)])
    assert "bob (O) wins!" in text(as_alice.get(f"/games/{game.pk}/"))


def test_draw(as_alice, as_bob, game):
    cells = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]
    game = play_through_http([as_alice, as_bob], game, cells)
    assert game.status == "draw"
    state = as_alice.get(f"/games/{game.pk}/state.json").json()
    assert (state["winner"], state["winning_line"]) == (None, None)
    assert "Draw." in text(as_alice.get(f"/games/{game.pk}/"))


def test_forfeit_by_x(as_alice, as_bob, game):
    page = as_alice.get(f"/games/{game.pk}/")
    assert "Yes, forfeit this game" in text(page)
    assert "Yes, forfeit this game" not in text(as_bob.get(f"/games/{game.pk}/"))
    response = as_alice.post(f"/games/{game.pk}/forfeit/")
    assert response.status_code == 302
    game.refresh_from_db()
    assert game.status == "x_forfeits"
    assert "You win: alice (X) forfeited." in text(as_bob.get(f"/games/{game.pk}/"))


def test_forfeit_by_o(as_alice, as_bob, game):
    move(as_alice, game, 1, 1)
    assert as_bob.post(f"/games/{game.pk}/forfeit/").status_code == 302
    game.refresh_from_db()
    assert (game.status, game.winner_mark) == ("o_forfeits", "X")


def test_rematch_swaps_sides_and_shows_the_series(as_alice, as_bob, game, bob, alice):
    as_alice.post(f"/games/{game.pk}/forfeit/")
    response = as_bob.post(f"/games/{game.pk}/rematch/")
    rematch = Game.objects.exclude(pk=game.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/games/{rematch.pk}/"
    assert (rematch.player_x, rematch.player_o) == (bob, alice)
    # The other player's rematch click lands in the same game.
    assert as_alice.post(f"/games/{game.pk}/rematch/")["Location"] == (
        f"/games/{rematch.pk}/"
    )
    page = as_alice.get(f"/games/{rematch.pk}/")
    assert "Series: bob 1 – 0 alice" in text(page)
    assert Game.objects.count() == 2


# -- rejections -----------------------------------------------------------


@pytest.fixture
def started(game, as_alice):
    move(as_alice, game, 0, 0)  # X at (0, 0); O (bob) to move.
    game.refresh_from_db()
    return game


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "Choose a cell on the board: row and column must be 0, 1 or 2."),
        ({"row": "1"}, "Choose a cell on the board"),
        ({"row": "a", "col": "1"}, "Choose a cell on the board"),
        ({"row": "3", "col": "1"}, "Choose a cell on the board"),
        ({"row": "-1", "col": "1"}, "Choose a cell on the board"),
        ({"row": "1.5", "col": "1"}, "Choose a cell on the board"),
        ({"row": "1", "col": "1", "ply": "x"}, "ply must be the number of moves"),
        ({"row": "1", "col": "1", "ply": "10"}, "ply must be the number of moves"),
    ],
)
def test_malformed_moves_are_400(as_bob, started, data, message):
    before = snapshot_tables()
    response = as_bob.post(f"/games/{started.pk}/move/", data)
    assert response.status_code == 400
    assert message in text(response)
    assert 'role="alert"' in text(response)
    assert snapshot_tables() == before


def test_rejected_moves_have_documented_codes_and_change_nothing(
    as_alice, as_bob, as_carol, started
):
    cases = [
        (as_alice, {"row": 1, "col": 1}, 403, "It is not your turn."),
        (as_carol, {"row": 1, "col": 1}, 403, "You are not a player in this game."),
        (as_bob, {"row": 0, "col": 0}, 409, "That cell is already taken."),
        (
            as_bob,
            {"row": 1, "col": 1, "ply": 0},
            409,
            "The board changed since you saw it.",
        ),
    ]
    for client, data, status, message in cases:
        before = snapshot_tables()
        response = client.post(f"/games/{started.pk}/move/", data)
        assert (response.status_code, message in text(response)) == (status, True)
        assert snapshot_tables() == before


def test_move_after_the_end_is_409(as_alice, as_bob, started):
    as_bob.post(f"/games/{started.pk}/forfeit/")
    before = snapshot_tables()
    response = move(as_alice, started, 2, 2)
    assert response.status_code == 409
    assert "The game is over" in text(response)
    assert snapshot_tables() == before


def test_double_submitted_move_is_stale_not_a_second_move(as_bob, started):
    first = move(as_bob, started, 1, 1, ply=1)
    second = move(as_bob, started, 1, 1, ply=1)
    assert (first.status_code, second.status_code) == (302, 409)
    assert Move.objects.filter(game=started).count() == 2


def test_forfeit_out_of_turn_is_403(as_alice, started):
    before = snapshot_tables()
    response = as_alice.post(f"/games/{started.pk}/forfeit/")
    assert response.status_code == 403
    assert "You can only forfeit on your own turn." in text(response)
    assert snapshot_tables() == before


def test_rematch_before_the_end_is_409_and_by_a_stranger_403(
    as_alice, as_carol, started
):
    before = snapshot_tables()
    assert as_alice.post(f"/games/{started.pk}/rematch/").status_code == 409
    assert as_carol.post(f"/games/{started.pk}/rematch/").status_code == 403
    assert snapshot_tables() == before


def test_unknown_game_is_404_with_a_message(as_alice):
    for url in ["/games/424242/", "/games/424242/state.json"]:
        assert as_alice.get(url).status_code == 404
    response = move(as_alice, Game(pk=424242), 0, 0)
    assert response.status_code == 404
    assert "There is no such game." in text(response)
    assert (
        "There is no such game."
        in as_alice.get("/games/424242/state.json").json()["error"]
    )
    assert "There is nothing at this address." in text(as_alice.get("/nowhere/"))


@pytest.mark.parametrize("route", ["move", "join", "forfeit", "rematch"])
def test_wrong_method_is_405_with_a_message(as_alice, started, route):
    response = as_alice.get(f"/games/{started.pk}/{route}/")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert "This address only accepts POST requests." in text(response)


def test_get_only_pages_refuse_post(as_alice, started):
    for url in ["/", f"/games/{started.pk}/", f"/games/{started.pk}/state.json"]:
        assert as_alice.post(url).status_code == 405


@pytest.mark.parametrize("route", ["move", "join", "forfeit", "rematch"])
def test_anonymous_posts_go_to_login_and_change_nothing(started, route):
    before = snapshot_tables()
    response = Client().post(f"/games/{started.pk}/{route}/", {"row": 1, "col": 1})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert snapshot_tables() == before


def test_anonymous_pages_go_to_login(started):
    for url in ["/", f"/games/{started.pk}/", f"/games/{started.pk}/state.json"]:
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_csrf_is_enforced(started, bob):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    before = snapshot_tables()
    response = client.post(f"/games/{started.pk}/move/", {"row": 1, "col": 1})
    assert response.status_code == 403
    assert "security token is missing or out of date" in text(response)
    assert snapshot_tables() == before
    # With the token from the page, the same move is accepted.
    page = client.get(f"/games/{started.pk}/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(page))[1]
    response = client.post(
        f"/games/{started.pk}/move/",
        {"row": 1, "col": 1, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302


# -- what each viewer sees ------------------------------------------------


def test_buttons_exactly_in_empty_cells_for_the_player_to_move(
    as_alice, as_bob, as_carol, game
):
    url = f"/games/{game.pk}/"
    all_cells = {(r, c) for r in range(3) for c in range(3)}
    assert buttons(as_alice.get(url)) == all_cells
    assert buttons(as_bob.get(url)) == set()
    move(as_alice, game, 1, 1)
    bob_page = as_bob.get(url)
    assert buttons(bob_page) == all_cells - {(1, 1)}
    assert set(CELL_BUTTON.findall(text(bob_page))) == {
        (str(r), str(c), "1") for r, c in all_cells - {(1, 1)}
    }
    assert "Your turn." in text(bob_page)
    alice_page = as_alice.get(url)
    assert buttons(alice_page) == set()
    assert "Waiting for bob (O)." in text(alice_page)
    spectator = as_carol.get(url)
    assert spectator.status_code == 200
    assert buttons(spectator) == set()
    assert "Forfeit" not in text(spectator)
    assert "Row 2, column 2: X" in text(spectator)
    assert 'aria-label="Place O in row 1, column 1"' in text(bob_page)


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


# -- query counts ---------------------------------------------------------


def _many_games(alice, bob, count, settings):
    settings.GAMES_MAX_UNSTARTED_PER_USER = (
        settings.GAMES_MAX_UNSTARTED_PER_OPPONENT
    ) = (
        count + 2  # and the test's own game
    )
    for _ in range(count):
        game = services.create_game(creator=alice, opponent=bob)
        services.play_move(game_id=game.pk, user=alice, row=0, col=0)
        services.create_game(creator=bob)
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )


@pytest.mark.parametrize("extra_games", [0, 30])
def test_game_page_queries_do_not_grow(
    as_bob, game, alice, bob, play, django_assert_num_queries, extra_games, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    _many_games(alice, bob, extra_games, settings)
    play(game, (0, 0), (1, 1), (0, 1), (2, 2), (0, 2))  # a long, finished game
    # user, game (players and series joined); the session comes from its cache
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    with django_assert_num_queries(2):
        assert as_bob.get(f"/games/{game.pk}/state.json").status_code == 200


@pytest.mark.parametrize("extra_games", [0, 30])
def test_lobby_queries_do_not_grow(
    as_alice, alice, bob, django_assert_num_queries, extra_games, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    _many_games(alice, bob, extra_games, settings)
    # user, the lobby's version; rendered: your, open, finished games
    with django_assert_num_queries(5):
        assert as_alice.get("/").status_code == 200
    # user, the version: the rest from the page cache (the session: its own)
    with django_assert_num_queries(2):
        assert as_alice.get("/").status_code == 200


def test_move_post_query_count(as_bob, started, django_assert_num_queries):
    # user, the move's read (game and players, no lock), the game's UPDATE if
    # its version is unchanged, insert move; inside the test's own transaction
    # the service's atomic() adds SAVEPOINT + RELEASE.
    with django_assert_num_queries(6):
        assert move(as_bob, started, 1, 1, ply=1).status_code == 302


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK")


def _statements(queries) -> list[str]:
    """The SQL a request runs, without transaction control (which SQLite shows
    and PostgreSQL's driver does not)."""
    return [q["sql"] for q in queries if not q["sql"].startswith(TRANSACTION_CONTROL)]


@pytest.mark.parametrize("opponent", ["bob", "alice"], ids=["two players", "self"])
def test_game_ending_move_query_count(client_for, alice, bob, play, opponent):
    # user, the move's read, update game (if its version is unchanged), insert
    # move, update series, insert result rows, upsert records
    game = services.create_game(creator=alice, opponent=locals()[opponent])
    play(game, (0, 0), (1, 1), (0, 1), (2, 2))
    as_alice = client_for(alice)
    with CaptureQueriesContext(connection) as queries:
        response = move(as_alice, game, 0, 2, ply=4)
    assert response.status_code == 302
    assert len(_statements(queries)) == 7
    game.refresh_from_db()
    assert game.status == "x_won"


@pytest.mark.sqlite_only  # a SQLite planner statistics case
def test_game_page_query_uses_an_index_after_analyze(as_bob, alice, bob):
    """With statistics, SQLite scanned every game to find a game's rematch
    (the unique index on rematch_of is nearly all NULLs): 20 ms a page at
    100,000 games. The partial index keeps that join a lookup."""
    for _ in range(3):
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        # What ANALYZE says of 100,000 games without a rematch (bench's large
        # scenario): every rematch_of is NULL, so that index looks useless.
        cursor.execute(
            "UPDATE sqlite_stat1 SET stat = '100000 100000' "
            "WHERE tbl = 'games_game' AND idx LIKE 'sqlite_autoindex_games_game_%'"
        )
        cursor.execute("ANALYZE sqlite_schema")  # reload the statistics
    game = Game.objects.first()
    with CaptureQueriesContext(connection) as queries:
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200
    game_sql = next(q["sql"] for q in queries if 'FROM "games_game"' in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + game_sql)
        plan = " | ".join(str(row) for row in cursor.fetchall())
    # No scan of the games table, for the game or for its rematch (tiny tables
    # such as this test's one series row may be scanned: that is cheaper).
    assert "SCAN T5" not in plan, plan
    assert "SCAN games_game" not in plan, plan


# -- abort ----------------------------------------------------------------

ABORT_FORM = re.compile(r'<form method="post" action="/games/(\d+)/abort/">')


def test_abort_button_without_confirmation_before_any_move(as_alice, as_carol, game):
    page = text(as_alice.get(f"/games/{game.pk}/"))
    assert len(ABORT_FORM.findall(page)) == 1
    assert '<button type="submit" class="button">Abort</button>' in page
    assert "<summary>Abort…</summary>" not in page
    assert not ABORT_FORM.search(text(as_carol.get(f"/games/{game.pk}/")))


def test_abort_asks_for_confirmation_after_one_move(as_alice, as_bob, game, play):
    play(game, (0, 0))
    for client in (as_alice, as_bob):
        page = text(client.get(f"/games/{game.pk}/"))
        assert "<summary>Abort…</summary>" in page
        assert "Yes, abort this game" in page
    play(game, (1, 1))
    for client in (as_alice, as_bob):
        assert not ABORT_FORM.search(text(client.get(f"/games/{game.pk}/")))


def test_an_aborted_game_says_who_and_offers_a_rematch(as_alice, as_bob, game, play):
    play(game, (0, 0))
    response = as_bob.post(f"/games/{game.pk}/abort/")
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    alice_page = text(as_alice.get(f"/games/{game.pk}/"))
    assert "Aborted by bob." in alice_page
    assert "Rematch (sides swapped)" in alice_page
    assert "1. X (0, 0)" in alice_page  # kept, with its moves
    assert not ABORT_FORM.search(alice_page)
    assert "Aborted by you." in text(as_bob.get(f"/games/{game.pk}/"))
    rematch = as_alice.post(f"/games/{game.pk}/rematch/")
    assert rematch.status_code == 302
    new = Game.objects.get(rematch_of=game)
    assert (new.player_x, new.player_o) == (game.player_o, game.player_x)


def test_abort_refusals_change_nothing(as_alice, as_carol, client, game, play):
    play(game, (0, 0), (1, 1))
    before = snapshot_tables()
    late = as_alice.post(f"/games/{game.pk}/abort/")
    assert late.status_code == 409
    assert (
        "Two moves have been played: finish the game or forfeit on your turn."
        in text(late)
    )
    stranger = as_carol.post(f"/games/{game.pk}/abort/")
    assert stranger.status_code == 403
    assert "You are not a player in this game." in text(stranger)
    anonymous = client.post(f"/games/{game.pk}/abort/")
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/accounts/login/?next=/games/{game.pk}/abort/"
    wrong_method = as_alice.get(f"/games/{game.pk}/abort/")
    assert wrong_method.status_code == 405
    assert wrong_method["Allow"] == "POST"
    missing = as_alice.post("/games/424242/abort/")
    assert missing.status_code == 404
    assert snapshot_tables() == before


def test_abort_needs_the_csrf_token(alice, game):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    before = snapshot_tables()
    response = client.post(f"/games/{game.pk}/abort/")
    assert response.status_code == 403
    assert snapshot_tables() == before


def test_state_json_of_an_aborted_game(as_bob, game, alice, play):
    play(game, (0, 0))
    services.abort(game_id=game.pk, user=alice)
    state = as_bob.get(f"/games/{game.pk}/state.json").json()
    assert {
        key: state[key]
        for key in ("status", "winner", "winning_line", "current_player", "ply")
    } == {
        "status": "aborted",
        "winner": None,
        "winning_line": None,
        "current_player": None,
        "ply": 1,
    }
    assert state["moves"] == [{"sequence_number": 1, "player": "X", "row": 0, "col": 0}]


def test_an_open_game_is_withdrawn_by_its_creator(as_alice, as_bob, alice):
    open_game = services.create_game(creator=alice)
    page = text(as_alice.get(f"/games/{open_game.pk}/"))
    assert "Abort (withdraw this open game)" in page
    assert as_alice.post(f"/games/{open_game.pk}/abort/").status_code == 302
    assert f"Join game {open_game.pk}" not in text(as_bob.get("/"))
    gone = as_bob.post(f"/games/{open_game.pk}/join/")
    assert gone.status_code == 409
    assert "This game was aborted: it cannot be joined." in text(gone)
    page = text(as_alice.get(f"/games/{open_game.pk}/"))
    assert "Aborted by you." in page
    assert "Rematch" not in page


# -- challenge limits -------------------------------------------------------


def test_challenge_limits_are_a_429_with_a_message(as_alice, bob, carol, settings):
    settings.GAMES_MAX_UNSTARTED_PER_OPPONENT = 1
    settings.GAMES_MAX_UNSTARTED_PER_USER = 2
    assert as_alice.post("/games/new/", {"opponent": "bob"}).status_code == 302
    again = as_alice.post("/games/new/", {"opponent": "bob"})
    assert again.status_code == 429
    assert (
        "You already have 1 games against bob in which they have not moved yet."
        in text(again)
    )
    assert as_alice.post("/games/new/", {"opponent": "carol"}).status_code == 302
    before = snapshot_tables()
    third = as_alice.post("/games/new/", {"opponent": "alice2"})
    assert third.status_code == 400  # no such player: parsed before the limits
    get_user_model().objects.create_user("dave", password=PASSWORD)
    full = as_alice.post("/games/new/", {"opponent": "dave"})
    assert full.status_code == 429
    assert "You already have 2 games in which your opponent has not moved" in text(full)
    assert snapshot_tables() == before
    assert as_alice.post("/games/new/", {"opponent": "alice"}).status_code == 302


# -- lobby queries ----------------------------------------------------------


def test_lobby_with_new_games_stays_at_five_queries_then_two(
    as_alice, alice, bob, carol, make_user, django_assert_num_queries, settings
):
    settings.GAMES_MAX_OPEN_PER_USER = 100
    for index in range(25):
        opponent = make_user(f"p{index}")
        services.create_game(creator=opponent, opponent=alice)  # new for alice
        services.create_game(creator=opponent)  # open
        services.forfeit(
            game_id=services.create_game(creator=alice, opponent=opponent).pk,
            user=alice,
        )
        # Finished lists show aborted games too (their rows load no more).
        aborted = services.create_game(creator=opponent, opponent=alice)
        services.abort(game_id=aborted.pk, user=alice)
    services.abort(game_id=services.create_game(creator=alice).pk, user=alice)
    # user, the lobby's version; rendered: your, open, finished games
    with django_assert_num_queries(5):
        response = as_alice.get("/")
    assert response.status_code == 200
    assert text(response).count("started a game against you.</span>") == 20
    assert text(response).count("Aborted by you.") == 11  # the open game, 10 others
    with django_assert_num_queries(5):  # the lists alone: a cache entry of their own
        assert as_alice.get("/lobby/live/").status_code == 200
    for path in ("/", "/lobby/live/"):
        with django_assert_num_queries(2):  # user, the version
            assert as_alice.get(path).status_code == 200
    # The archive and the player page list the same rows without more queries.
    with django_assert_num_queries(2):
        assert as_alice.get("/games/archive/").status_code == 200


# -- player pages -------------------------------------------------------------


def test_head_to_head_lists_more_than_fifty_opponents(as_bob, alice, make_user):
    for index in range(55):
        opponent = make_user(f"rival{index:02}")
        services.forfeit(
            game_id=services.create_game(creator=opponent, opponent=alice).pk,
            user=opponent,
        )
    page = text(as_bob.get("/players/alice/"))
    for index in range(55):
        assert f"alice 1 – 0 rival{index:02}" in page


def test_someone_elses_self_play_reads_against_themselves(
    as_alice, as_bob, alice, play
):
    solo = services.create_game(creator=alice, opponent=alice)
    play(solo, (0, 0), (1, 0), (0, 1), (1, 1), (0, 2))
    assert "Against yourself — X wins!" in text(as_alice.get("/players/alice/"))
    other = text(as_bob.get("/players/alice/"))
    assert "against themselves" in other
    assert "Against themselves — X wins!" in other
    assert "yourself" not in other.lower()
    own = text(as_alice.get("/games/archive/"))
    assert "against yourself" in own
    assert "Against yourself — X wins!" in own


def test_the_archive_lists_aborted_games_under_their_filter(as_alice, alice, bob):
    aborted = services.create_game(creator=bob, opponent=alice)
    services.abort(game_id=aborted.pk, user=bob)
    services.forfeit(
        game_id=services.create_game(creator=alice, opponent=bob).pk, user=alice
    )
    response = as_alice.get("/games/archive/", {"result": "aborted"})
    assert response.status_code == 200
    assert [result.game_id for result, _ in response.context["results"]] == [aborted.pk]
    assert "Aborted by bob." in text(response)
    assert len(as_alice.get("/games/archive/").context["results"]) == 2
    withdrawn = services.create_game(creator=alice)
    services.abort(game_id=withdrawn.pk, user=alice)
    for page in ("/games/archive/?result=aborted", "/players/alice/"):
        response = as_alice.get(page)
        assert response.status_code == 200
        assert "an open game nobody joined" in text(response)
        assert "Aborted by you." in text(response)
