"""Your data to take away: /accounts/data/ after the password again, one JSON
file of everything the site keeps about you, games of every status included,
in a fixed number of queries however many games."""

import json

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from games import services
from games.models import Game

from ..conftest import DRAW, O_WINS_ROW_1, PASSWORD, X_WINS_ROW_0, forfeit_now, new_game
from ..support.account_client import confirmed
from .test_usersessions import browser

DATA = "/accounts/data/"
REAUTHENTICATE = "/accounts/reauthenticate/?next=%2Faccounts%2Fdata%2F"


@pytest.fixture
def alices_games(alice, bob, carol, play):
    """alice's games, one of each status, by the services; and bob's game
    against carol, which is not hers."""
    games = {
        "waiting": services.create_game(creator=alice),
        "in_progress": play(new_game(alice, bob), (1, 1), (0, 0)),
        "x_won": play(new_game(alice, bob), *X_WINS_ROW_0),  # alice won as X
        "o_won": play(new_game(alice, bob), *O_WINS_ROW_1),  # alice lost as X
        "draw": play(new_game(alice, bob), *DRAW),  # alice drew as X
        "x_forfeits": forfeit_now(new_game(alice, bob)),  # alice forfeited as X
        "aborted": services.abort(
            game_id=new_game(alice, carol).pk, user=carol
        ),  # carol aborted
        "self_play": play(new_game(alice, alice), *X_WINS_ROW_0),
        "invitation": services.create_invitation(creator=alice).game,
    }
    o_forfeits = play(new_game(bob, alice), (2, 2))
    games["o_forfeits"] = services.forfeit(game_id=o_forfeits.pk, user=alice)
    play(new_game(bob, carol), (0, 0))
    return games


def reauthenticated(client) -> Client:
    response = client.post(
        "/accounts/reauthenticate/?next=/accounts/data/", {"password": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"] == DATA
    return client


def download(client) -> dict:
    response = client.get(DATA)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"].startswith(
        'attachment; filename="tictactoe-data-'
    )
    return json.loads(response.content)


def test_it_asks_for_the_password_first(client_for, alice):
    client = client_for(alice)
    response = client.get(DATA)
    assert response.status_code == 302
    assert response["Location"] == REAUTHENTICATE
    wrong = client.post(
        "/accounts/reauthenticate/?next=/accounts/data/", {"password": "nope"}
    )
    assert wrong.status_code == 400
    assert client.get(DATA).status_code == 302
    assert download(reauthenticated(client))["account"]["username"] == "alice"


def test_it_needs_a_login_and_a_get(client_for, alice, db):
    response = Client().get(DATA)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={DATA}"
    client = reauthenticated(client_for(alice))
    response = client.post(DATA)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


def test_the_account_page_offers_it(client_for, alice):
    page = client_for(alice).get("/accounts/password/change/").text
    assert f'<a class="button" href="{DATA}">Download your data</a>' in page


def test_everything_about_you(client_for, alice, bob, carol, alices_games):
    confirmed(alice, "alice@example.com")
    services.block_player(blocker=alice, blocked=carol)
    services.block_player(blocker=bob, blocked=alice)  # bob's block: not hers
    client = Client(HTTP_USER_AGENT="Firefox")
    client.post(
        "/accounts/login/",
        {"login": "alice", "password": PASSWORD},
        REMOTE_ADDR="198.51.100.9",
    )
    Authenticator.objects.create(
        user=alice, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"}
    )
    response = reauthenticated(client).get("/accounts/data/")
    assert "JBSWY3DPEHPK3PXP" not in response.text
    data = json.loads(response.content)

    assert data["format"] == "tictactoe personal data, version 1"
    account = data["account"]
    assert (account["id"], account["username"], account["is_active"]) == (
        alice.pk,
        "alice",
        True,
    )
    assert account["last_login"] is not None
    assert data["email_addresses"] == [
        {"email": "alice@example.com", "verified": True, "primary": True}
    ]
    assert data["preferences"] == {
        "turn_emails": False,
        "turn_email_last_sent_at": None,
        "last_seen_at": None,
        "language": "",
        "time_zone": "",
        "new_games_private": False,
    }
    assert [b["username"] for b in data["blocked"]] == ["carol"]
    ((factor_type, name, used),) = [
        (f["type"], f["name"], f["last_used_at"]) for f in data["second_factors"]
    ]
    assert (factor_type, name, used) == ("totp", None, None)
    assert [(s["ip"], s["user_agent"]) for s in data["signed_in_browsers"]] == [
        ("198.51.100.9", "Firefox")
    ]

    by_id = {game["id"]: game for game in data["games"]}
    assert set(by_id) == {game.pk for game in alices_games.values()}
    statuses = {name: by_id[game.pk]["status"] for name, game in alices_games.items()}
    assert statuses == {
        "waiting": "waiting",
        "in_progress": "in_progress",
        "x_won": "x_won",
        "o_won": "o_won",
        "draw": "draw",
        "x_forfeits": "x_forfeits",
        "o_forfeits": "o_forfeits",
        "aborted": "aborted",
        "self_play": "x_won",
        "invitation": "waiting",
    }
    results = {
        name: by_id[game.pk]["your_result"] for name, game in alices_games.items()
    }
    assert results == {
        "waiting": None,
        "in_progress": None,
        "x_won": "win",
        "o_won": "loss",
        "draw": "draw",
        "x_forfeits": "forfeit",
        "o_forfeits": "forfeit",
        "aborted": "aborted",
        "self_play": "self_play",
        "invitation": None,
    }
    won = by_id[alices_games["x_won"].pk]
    assert [(m["player"], m["row"], m["col"]) for m in won["moves"]] == [
        ("X", 0, 0),
        ("O", 1, 0),
        ("X", 0, 1),
        ("O", 1, 1),
        ("X", 0, 2),
    ]
    assert all(m["played_at"] for m in won["moves"])
    assert (won["player_x"], won["player_o"], won["your_marks"]) == (
        "alice",
        "bob",
        ["X"],
    )
    assert won["winning_line"] == [[0, 0], [0, 1], [0, 2]]
    assert won["finished_at"] is not None
    assert by_id[alices_games["self_play"].pk]["your_marks"] == ["X", "O"]
    assert by_id[alices_games["invitation"].pk]["by_invitation"] is True
    assert by_id[alices_games["invitation"].pk]["private"] is False
    assert by_id[alices_games["aborted"].pk]["aborted_by"] == "carol"
    assert by_id[alices_games["o_forfeits"].pk]["created_by"] == "bob"
    assert "secret" not in json.dumps(by_id[alices_games["invitation"].pk])

    assert data["record"] == {
        "as_x": {"wins": 1, "losses": 1, "forfeits": 1, "draws": 1},
        "as_o": {"wins": 0, "losses": 0, "forfeits": 1, "draws": 0},
        "self_play": 1,
    }
    assert data["head_to_head"] == [
        {"opponent": "bob", "wins": 1, "losses": 3, "draws": 1}
    ]
    # Nothing of anyone else's account.
    assert "password" not in json.dumps(data)


def test_the_download_costs_the_same_for_many_games(
    client_for, alice, bob, play, django_assert_num_queries
):
    client = reauthenticated(client_for(alice))
    play(new_game(alice, bob), *X_WINS_ROW_0)

    def queries() -> int:
        with django_assert_num_queries(12) as context:
            download(client)
        return len(context.captured_queries)

    # The session's user; the games, their moves; the results, the your-turn
    # choice, the language and zone, the record; addresses, blocks, browsers;
    # the series.
    assert queries() == 12
    for _ in range(12):
        play(new_game(alice, bob), *DRAW)
    assert Game.objects.of(alice).count() == 13
    assert queries() == 12


def test_only_your_own_browsers(alice, bob):
    """bob's signed-in browsers, recorded by his own logins, stay out of
    alice's download."""

    browser("bob", "203.0.113.7", "Bob's Safari")
    browser("bob", "203.0.113.8", "Bob's Chrome")
    client = browser("alice", "198.51.100.9", "Alice's Firefox")
    browser("alice", "198.51.100.10", "Alice's Edge")

    data = download(reauthenticated(client))
    assert [(s["ip"], s["user_agent"]) for s in data["signed_in_browsers"]] == [
        ("198.51.100.9", "Alice's Firefox"),
        ("198.51.100.10", "Alice's Edge"),
    ]
    assert "203.0.113." not in json.dumps(data)
    assert "Bob's" not in json.dumps(data)
