"""Closing an account, through HTTP and through accounts.services: what it
does to the account, its sessions and addresses, and to every game of theirs."""

from io import StringIO

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client

from accounts import services as account_services
from games import refusals, services
from games.models import Game, GameStatus, PlayerRecord, PlayerResult

from ..conftest import DRAW, PASSWORD, X_WINS_ROW_0, forfeit_now, new_game
from ..support.account_client import WRONG_PASSWORD, logged_in_as, login, signup

User = get_user_model()

# The 405 page says what the address takes, without the methods' names.
METHOD_MESSAGES = {
    "GET, HEAD": "This address is a page to open: it takes no form.",
    "POST": "This address only takes what a button or form of this site sends.",
}
METHOD_OTHER = "This address does not take that kind of request."


def close(client, password=PASSWORD):
    return client.post("/accounts/close/", {"password": password})


def test_close_page_needs_a_login(client):
    response = client.get("/accounts/close/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/close/"


def test_close_page_explains_and_asks_for_the_password(
    client_for, alice, django_assert_num_queries
):
    client = client_for(alice)
    with django_assert_num_queries(1):  # the user
        response = client.get("/accounts/close/")
    assert response.status_code == 200
    assert "Closing your account cannot be undone" in response.text
    assert "alice (closed)" in response.text
    assert 'name="password"' in response.text
    assert 'name="csrfmiddlewaretoken"' in response.text


def test_closing_needs_the_right_password(client_for, alice, bob):
    game = new_game(alice, bob)
    client = client_for(alice)
    response = close(client, "not-it")
    assert response.status_code == 400
    assert WRONG_PASSWORD in response.text
    alice.refresh_from_db()
    assert alice.is_active
    assert alice.check_password(PASSWORD)
    assert Game.objects.get(pk=game.pk).status == GameStatus.IN_PROGRESS
    assert logged_in_as(client) == "alice"


def test_closing_ends_every_session_and_refuses_logins(make_user):
    alice = make_user("alice")
    EmailAddress.objects.create(user=alice, email="alice@example.com", verified=True)
    here, elsewhere = login("alice"), login("alice")
    response = close(here)
    assert response.status_code == 302
    assert response["Location"] == "/"
    page = here.get("/", follow=True)
    assert "The account “alice” is closed." in page.text
    assert logged_in_as(here) is None
    assert logged_in_as(elsewhere) is None

    refused = Client().post(
        "/accounts/login/", {"login": "alice", "password": PASSWORD}
    )
    assert refused.status_code == 400
    assert "The username and/or password you specified are not correct." in (
        refused.text
    )
    assert refused.wsgi_request.user.is_anonymous

    alice.refresh_from_db()
    assert not alice.is_active
    assert not alice.has_usable_password()
    assert alice.email == ""
    assert not EmailAddress.objects.filter(user=alice).exists()
    # No reset link for a closed account: its address is gone (the mail that
    # goes out says no account has it).
    reset = Client().post("/accounts/password/reset/", {"email": "alice@example.com"})
    assert reset.status_code == 302
    (message,) = mail.outbox
    assert "/accounts/password/reset/key/" not in message.body


def test_a_closed_name_cannot_be_registered_again(alice):
    account_services.close_account(user=alice)
    for name in ("alice", "ALICE"):
        response = signup(name)
        assert response.status_code == 400
        assert "A user with that username already exists." in response.text
    assert User.objects.filter(username__iexact="alice").count() == 1


def test_the_email_address_of_a_closed_account_can_be_used_again(make_user):
    alice = make_user("alice")
    EmailAddress.objects.create(user=alice, email="alice@example.com", verified=True)
    account_services.close_account(user=alice)
    assert signup("alison", "alice@example.com").status_code == 302
    (address,) = EmailAddress.objects.all()
    assert (address.user.username, address.verified) == ("alison", False)
    (message,) = mail.outbox
    assert "/accounts/confirm-email/" in message.body


def test_closing_removes_the_second_factors_and_nobody_elses(make_user):
    staff = make_user("staff", is_staff=True)  # make_user gives staff an app
    make_user("other", is_staff=True)
    Authenticator.objects.create(
        user=staff, type=Authenticator.Type.RECOVERY_CODES, data={"seed": "00"}
    )
    account_services.close_account(user=staff)
    assert list(
        Authenticator.objects.values_list("user__username", "type").order_by("type")
    ) == [("other", "totp")]


@pytest.fixture
def alice_history(alice, bob, carol, play):
    """Finished games of alice, and one unfinished game of each kind."""
    finished = [
        play(new_game(alice, bob), *X_WINS_ROW_0),  # alice wins as X
        play(new_game(bob, alice), *DRAW),
        forfeit_now(new_game(bob, alice)),  # bob forfeits
    ]
    her_turn = play(new_game(alice, bob), (0, 0), (1, 1))  # X to move: alice
    their_turn = play(new_game(bob, alice), (0, 0), (1, 1), (2, 2))  # O: alice
    bobs_turn = play(new_game(carol, alice), (0, 0), (1, 1))  # X to move: carol
    self_play = play(new_game(alice, alice), (0, 0), (1, 1))
    return {
        # Fewer than two moves: aborted (the abort rules), whoever is to move.
        "open": services.create_game(creator=alice),
        "no moves, her turn": new_game(alice, bob),
        "one move, her turn": play(new_game(bob, alice), (0, 0)),
        "one move, opponent's turn": play(new_game(alice, carol), (0, 0)),
        "finished": finished,
        "her turn": her_turn,
        "her turn as O": their_turn,
        "opponent's turn": bobs_turn,
        "self-play": self_play,
    }


def _games_and_records():
    """Finished games (but their updated_at, which closing an account moves on
    purpose) and results."""
    finished = Game.objects.filter(finished_at__isnull=False).order_by("pk")
    return (
        [game | {"updated_at": None} for game in finished.values()],
        list(PlayerResult.objects.order_by("pk").values()),
    )


def test_closing_aborts_forfeits_where_it_is_her_turn_and_keeps_the_rest(
    alice, bob, carol, alice_history
):
    finished_before, results_before = _games_and_records()
    records_before = list(PlayerRecord.objects.order_by("pk").values())

    account_services.close_account(user=alice)

    def status(name):
        return Game.objects.get(pk=alice_history[name].pk).status

    for name in (
        "open",
        "no moves, her turn",
        "one move, her turn",
        "one move, opponent's turn",
    ):
        game = Game.objects.get(pk=alice_history[name].pk)
        assert (game.status, game.aborted_by_id) == (GameStatus.ABORTED, alice.pk)
    assert status("her turn") == GameStatus.X_FORFEITS
    assert status("her turn as O") == GameStatus.O_FORFEITS
    assert status("self-play") == GameStatus.X_FORFEITS
    assert status("opponent's turn") == GameStatus.IN_PROGRESS
    # Finished games and their results stay as they were.
    finished_after, results_after = _games_and_records()
    assert finished_after[: len(finished_before)] == finished_before
    assert results_after[: len(results_before)] == results_before
    # The forfeits count like any other (a loss for alice, a win for bob); the
    # aborted games count for nobody.
    expected = {row["player_id"]: dict(row) for row in records_before}
    expected[alice.pk]["x_forfeits"] += 1
    expected[alice.pk]["o_forfeits"] += 1
    expected[alice.pk]["self_play"] += 1
    expected[bob.pk]["o_wins"] += 1
    expected[bob.pk]["x_wins"] += 1
    assert {row["player_id"]: row for row in PlayerRecord.objects.values()} == (
        expected
    )
    call_command("check_games", stdout=StringIO())


def test_a_game_that_stays_says_that_the_player_left(
    client_for, alice, carol, alice_history
):
    game = alice_history["opponent's turn"]
    account_services.close_account(user=alice)
    page = client_for(carol).get(f"/games/{game.pk}/")
    assert page.status_code == 200
    assert "Your turn. alice has left: they closed their account." in page.text
    assert "alice (closed)</a>" in page.text
    lobby = client_for(carol).get("/")
    assert "alice has left: they closed their account." in lobby.text
    # carol plays on; when alice's turn comes, she forfeits: carol is never left
    # waiting for a move that cannot come.
    response = client_for(carol).post(
        f"/games/{game.pk}/move/", {"row": 2, "col": 2, "ply": 2}
    )
    assert response.status_code == 302
    game.refresh_from_db()
    assert (game.status, game.board) == (GameStatus.O_FORFEITS, "X---O---X")
    assert list(game.moves.values_list("sequence_number", "player")) == [
        (1, "X"),
        (2, "O"),
        (3, "X"),
    ]
    result = client_for(carol).get(f"/games/{game.pk}/")
    assert "You win: alice (closed) (O) forfeited." in result.text


def test_the_name_shows_as_closed_everywhere(client_for, alice, bob, alice_history):
    won = alice_history["finished"][0]
    account_services.close_account(user=alice)
    as_bob = client_for(bob)
    pages = {
        "game": as_bob.get(f"/games/{won.pk}/"),
        "player page": as_bob.get("/players/alice/"),
        "bob's page": as_bob.get("/players/bob/"),
        "archive": as_bob.get("/games/archive/"),
        "lobby": as_bob.get("/"),
    }
    for name, page in pages.items():
        assert page.status_code == 200, name
        assert "alice (closed)" in page.text, name
    assert "<h1>alice (closed)</h1>" in pages["player page"].text
    assert f"Game {won.pk}: alice (closed) vs bob" in pages["game"].text
    assert "alice (closed) 2 – 2 bob, 1 draw" in pages["game"].text
    # state.json keeps the username: it is an identifier there.
    state = as_bob.get(f"/games/{won.pk}/state.json").json()
    assert state["player_x"] == "alice"


def test_no_new_games_with_a_closed_account(client_for, alice, bob, alice_history):
    won = alice_history["finished"][0]
    account_services.close_account(user=alice)
    as_bob = client_for(bob)
    before = Game.objects.count()
    response = as_bob.post("/games/new/", {"opponent": "alice", "side": "x"})
    assert response.status_code == 400
    assert "“alice” has closed their account: choose another opponent." in (
        response.text
    )
    rematch = as_bob.post(f"/games/{won.pk}/rematch/")
    assert rematch.status_code == 409
    assert "That player has closed their account: no new games with them." in (
        rematch.text
    )
    assert Game.objects.count() == before


def test_closing_an_account_touches_every_game_of_theirs(
    alice, bob, carol, alice_history
):
    """Each game of alice's gets a new updated_at, finished ones too: the lobbies
    of her opponents are keyed by it (Game.objects.lobby_version) and must show
    "alice (closed)". Games without her keep theirs."""
    others = new_game(bob, carol)
    before = dict(Game.objects.values_list("pk", "updated_at"))
    account_services.close_account(user=alice)
    after = dict(Game.objects.values_list("pk", "updated_at"))
    theirs = set(Game.objects.of(alice).values_list("pk", flat=True))
    assert len(theirs) == 11
    assert {pk for pk in after if after[pk] > before[pk]} == theirs
    assert after[others.pk] == before[others.pk]


def test_closing_a_closed_account_changes_nothing(alice, bob, alice_history):
    account_services.close_account(user=alice)
    games = list(Game.objects.order_by("pk").values())
    account_services.close_account(user=alice)
    assert list(Game.objects.order_by("pk").values()) == games


def test_staff_see_closed_accounts_in_the_admin(client_for, alice, bob, make_user):
    root = make_user("root", is_staff=True, is_superuser=True)
    account_services.close_account(user=alice)
    admin = client_for(root)
    closed = admin.get("/admin/auth/user/?account=closed")
    assert closed.status_code == 200
    assert ">alice</a>" in closed.text
    assert ">bob</a>" not in closed.text
    assert "Closed" in closed.text
    open_ = admin.get("/admin/auth/user/?account=open")
    assert ">alice</a>" not in open_.text
    assert ">bob</a>" in open_.text


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/accounts/signup/", "GET, HEAD, POST"),
        ("/accounts/login/", "GET, HEAD, POST"),
        ("/accounts/logout/", "POST"),
        ("/accounts/reauthenticate/", "GET, HEAD, POST"),
        ("/accounts/password/change/", "GET, HEAD, POST"),
        ("/accounts/password/reset/", "GET, HEAD, POST"),
        ("/accounts/password/reset/done/", "GET, HEAD, POST"),
        ("/accounts/password/reset/key/1-set-password/", "GET, HEAD, POST"),
        ("/accounts/email/", "GET, HEAD, POST"),
        ("/accounts/confirm-email/abc/", "GET, HEAD, POST"),
        ("/accounts/close/", "GET, HEAD, POST"),
    ],
)
def test_account_pages_answer_other_methods_with_a_readable_405(
    client_for, alice, path, allow
):
    client = client_for(alice)
    for method in ("PUT", "DELETE", "PATCH") + (
        ("POST",) if "POST" not in allow else ()
    ):
        response = client.generic(method, path)
        assert response.status_code == 405
        assert response["Allow"] == allow
        assert METHOD_MESSAGES.get(allow, METHOD_OTHER) in response.text
    alice.refresh_from_db()
    assert alice.is_active


def test_a_game_cannot_start_against_an_account_closed_meanwhile(alice, bob):
    """The opponent was looked up before the account closed: create_game
    re-reads the locked row (the lock that orders it with close_account)."""
    seen_before = User.objects.get(pk=alice.pk)
    account_services.close_account(user=alice)
    with pytest.raises(refusals.PlayerLeft):
        services.create_game(creator=bob, opponent=seen_before)
    assert not Game.objects.exists()
