"""Accounts people look after themselves, through HTTP: change the password,
reset it by email, an optional email address, close the account."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import mail
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.test import Client

from games import forms, services
from games.models import (
    Game,
    GameStatus,
    PasswordResetRequest,
    PlayerRecord,
    PlayerResult,
)

from .conftest import DRAW, PASSWORD, X_WINS_ROW_0, forfeit_now, new_game

NEW_PASSWORD = "another-long-password-77"
WRONG_PASSWORD = "That is not your current password."
OLD_PASSWORD_WRONG = "Your old password was entered incorrectly."
EMAIL_TAKEN = "Another account already uses this email address."
RESET_LINK = re.compile(r"https?://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)")
RESET_SENT = "If an account has that email address, we have sent it a link"
RESET_THROTTLED = "Too many password-reset requests for this email address"
LINK_INVALID = "This password-reset link has expired, has already been used"
LOCKED_OUT = "Too many failed login attempts for this account or from your network"
User = get_user_model()


def logged_in_as(client) -> str | None:
    """Whose session this is, as the next request sees it."""
    response = client.get("/")
    if response.status_code != 200:
        return None
    return re.search(r"Signed in as <strong>([^<]+)</strong>", response.text)[1]


def login(username: str, password: str, address="198.51.100.1") -> Client:
    client = Client()
    client.post(
        "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
    )
    return client


# -- change password ------------------------------------------------------------


def test_password_change_needs_a_login(client):
    response = client.get("/accounts/password_change/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/password_change/"


def test_password_change_page(client_for, alice, django_assert_num_queries):
    client = client_for(alice)
    # the user: the session comes from its cache (settings.CACHES["sessions"])
    with django_assert_num_queries(1):
        response = client.get("/accounts/password_change/")
    assert response.status_code == 200
    assert '<a href="/accounts/password_change/">Account</a>' in response.text
    assert 'aria-current="page">Change password</a>' in response.text


def test_password_change_refuses_a_wrong_current_password(client_for, alice):
    response = client_for(alice).post(
        "/accounts/password_change/",
        {
            "old_password": "not-it",
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert response.status_code == 400
    assert OLD_PASSWORD_WRONG in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_applies_the_signup_validators(client_for, alice):
    response = client_for(alice).post(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": "123", "new_password2": "123"},
    )
    assert response.status_code == 400
    assert "This password is too short." in response.text
    assert "This password is too common." in response.text
    assert "This password is entirely numeric." in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_keeps_this_session_and_ends_the_others(alice):
    here, elsewhere = login("alice", PASSWORD), login("alice", PASSWORD)
    assert logged_in_as(elsewhere) == "alice"
    response = here.post(
        "/accounts/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password_change/done/"
    done = here.get(response["Location"])
    assert done.status_code == 200
    assert "Your password is changed." in done.text
    assert logged_in_as(here) == "alice"
    assert logged_in_as(elsewhere) is None
    assert logged_in_as(login("alice", NEW_PASSWORD)) == "alice"
    assert logged_in_as(login("alice", PASSWORD)) is None


def test_wrong_current_passwords_count_as_failed_logins(settings, client_for, alice):
    """A stolen session cannot be used to guess the password without limit."""
    client = client_for(alice)
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        response = client.post("/accounts/email/", {"email": "", "password": "x"})
        assert response.status_code == 400
    response = client.post(
        "/accounts/close/", {"password": "x"}, REMOTE_ADDR="192.0.2.1"
    )
    assert response.status_code == 429
    assert LOCKED_OUT in response.text
    # Now even the right password is refused, here and at the login form.
    response = client.post("/accounts/close/", {"password": PASSWORD})
    assert response.status_code == 429
    alice.refresh_from_db()
    assert alice.is_active
    assert logged_in_as(login("alice", PASSWORD, address="192.0.2.2")) is None


# -- email address ----------------------------------------------------------------


def signup(username: str, email: str | None = None, client=None):
    data = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    if email is not None:
        data["email"] = email
    return (client or Client()).post("/accounts/signup/", data)


def test_signup_stores_an_optional_email_address(db):
    assert signup("dora", "Dora@Example.COM").status_code == 302
    assert signup("erin").status_code == 302
    assert signup("fay", "").status_code == 302
    emails = dict(User.objects.values_list("username", "email"))
    assert emails == {"dora": "Dora@example.com", "erin": "", "fay": ""}


def test_signup_refuses_an_email_address_in_use_in_any_case(make_user):
    make_user("dora", email="dora@example.com")
    response = signup("erin", "DORA@example.COM")
    assert response.status_code == 400
    assert EMAIL_TAKEN in response.text
    assert response.text.count('class="errorlist') == 1
    assert not User.objects.filter(username="erin").exists()


def test_signup_refuses_a_malformed_email_address(db):
    response = signup("erin", "not an address")
    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert not User.objects.filter(username="erin").exists()


def test_the_database_refuses_a_second_account_with_an_address(make_user):
    """Two sign-ups that both pass the form check (a race): the unique index on
    LOWER(email) lets only one through. Blank addresses may repeat."""
    make_user("dora", email="dora@example.com")
    make_user("erin", email="")
    make_user("fay", email="")
    with pytest.raises(IntegrityError), transaction.atomic():
        make_user("gil", email="DORA@EXAMPLE.com")
    assert not User.objects.filter(username="gil").exists()


def test_a_sign_up_that_loses_the_race_gets_the_form_error(make_user, monkeypatch):
    """The form check saw no other account with the address; by the time of the
    write, one exists: the answer is the same 400 as the form check gives."""
    make_user("dora", email="dora@example.com")
    monkeypatch.setattr(forms, "unique_email", lambda email, owner=None: email)
    client = Client()
    response = signup("erin", "Dora@example.com", client=client)
    assert response.status_code == 400
    assert EMAIL_TAKEN in response.text
    assert not User.objects.filter(username="erin").exists()
    assert logged_in_as(client) is None


def test_email_page_needs_a_login(client):
    for method in (client.get, client.post):
        response = method("/accounts/email/")
        assert response.status_code == 302
        assert response["Location"] == "/accounts/login/?next=/accounts/email/"


def test_email_page_shows_the_address(client_for, make_user, django_assert_num_queries):
    dora = make_user("dora", email="dora@example.com")
    client = client_for(dora)
    with django_assert_num_queries(1):  # the user
        response = client.get("/accounts/email/")
    assert response.status_code == 200
    assert "Your account's address is <strong>dora@example.com</strong>" in (
        response.text
    )
    assert 'value="dora@example.com"' in response.text


def test_adding_changing_and_removing_the_email_address(client_for, alice):
    client = client_for(alice)
    for address, stored, message in [
        ("alice@Example.org", "alice@example.org", "is now alice@example.org"),
        ("ALICE@example.org", "ALICE@example.org", "is now ALICE@example.org"),
        ("", "", "Your email address is removed."),
    ]:
        response = client.post(
            "/accounts/email/", {"email": address, "password": PASSWORD}
        )
        assert response.status_code == 302
        assert response["Location"] == "/accounts/email/"
        assert message in client.get("/accounts/email/").text
        alice.refresh_from_db()
        assert alice.email == stored
    assert logged_in_as(client) == "alice"


def test_changing_the_email_address_asks_for_the_password(client_for, alice):
    response = client_for(alice).post(
        "/accounts/email/", {"email": "alice@example.org", "password": "nope"}
    )
    assert response.status_code == 400
    assert WRONG_PASSWORD in response.text
    alice.refresh_from_db()
    assert alice.email == ""


def test_changing_to_an_address_in_use_is_refused(client_for, alice, make_user):
    make_user("dora", email="dora@example.com")
    response = client_for(alice).post(
        "/accounts/email/", {"email": "Dora@Example.com", "password": PASSWORD}
    )
    assert response.status_code == 400
    assert EMAIL_TAKEN in response.text
    alice.refresh_from_db()
    assert alice.email == ""


# -- forgotten password ---------------------------------------------------------


@pytest.fixture
def dora(make_user):
    return make_user("dora", email="dora@example.com")


def ask_for_reset(email: str, address="198.51.100.7", client=None):
    return (client or Client()).post(
        "/accounts/password_reset/", {"email": email}, REMOTE_ADDR=address
    )


def reset_link() -> str:
    (message,) = mail.outbox
    return RESET_LINK.search(message.body)[1]


def test_reset_page_is_linked_from_the_login_page(
    db, client, django_assert_num_queries
):
    assert '<a href="/accounts/password_reset/">' in client.get("/accounts/login/").text
    with django_assert_num_queries(0):
        assert client.get("/accounts/password_reset/").status_code == 200


def test_the_answer_is_the_same_whether_or_not_the_address_is_known(dora):
    known = ask_for_reset("DORA@example.com")
    unknown = ask_for_reset("nobody@example.com")
    assert known.status_code == unknown.status_code == 302
    assert known.cookies.keys() == unknown.cookies.keys()
    assert known["Location"] == unknown["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["dora@example.com"]
    page = Client().get("/accounts/password_reset/done/")
    assert page.status_code == 200
    assert RESET_SENT in page.text
    assert "The link works once, for 1\xa0hour." in page.text


def test_reset_by_email_end_to_end(dora):
    elsewhere = login("dora", PASSWORD)
    assert ask_for_reset("dora@example.com").status_code == 302
    message = mail.outbox[0]
    assert message.subject == "Reset your tictactoe password"
    assert "Hello dora," in message.body
    assert "The link works once, for 1\xa0hour." in message.body
    link = reset_link()

    client = Client()
    response = client.get(link)
    # Django moves the token out of the address (into the session) first.
    assert response.status_code == 302
    form = client.get(response["Location"])
    assert form.status_code == 200
    assert "Choose a new password" in form.text
    weak = client.post(
        response["Location"], {"new_password1": "123", "new_password2": "123"}
    )
    assert weak.status_code == 400
    assert "This password is too short." in weak.text
    done = client.post(
        response["Location"],
        {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert done.status_code == 302
    assert done["Location"] == "/accounts/reset/done/"
    assert "Your new password is set" in client.get(done["Location"]).text

    assert logged_in_as(login("dora", NEW_PASSWORD)) == "dora"
    assert logged_in_as(elsewhere) is None
    # The link worked once.
    again = Client().get(link, follow=True)
    assert again.status_code == 400
    assert LINK_INVALID in again.text


def test_a_reset_link_expires(dora, settings, monkeypatch):
    ask_for_reset("dora@example.com")
    link = reset_link()
    generator_now = PasswordResetTokenGenerator._now
    later = timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1)
    monkeypatch.setattr(
        PasswordResetTokenGenerator, "_now", lambda self: generator_now(self) + later
    )
    response = Client().get(link, follow=True)
    assert response.status_code == 400
    assert LINK_INVALID in response.text
    dora.refresh_from_db()
    assert dora.check_password(PASSWORD)


@pytest.mark.parametrize(
    "link",
    [
        "/accounts/reset/MQ/set-password/",
        "/accounts/reset/junk/junk-token/",
        "/accounts/reset/%F0%9F%98%80/x/",
    ],
)
def test_a_mangled_reset_link_is_a_readable_400(dora, link):
    response = Client().get(link)
    assert response.status_code == 400
    assert LINK_INVALID in response.text
    post = Client().post(link, {"new_password1": "x", "new_password2": "x"})
    assert post.status_code == 400
    dora.refresh_from_db()
    assert dora.check_password(PASSWORD)


def test_reset_requests_for_one_address_are_throttled(dora, settings):
    limit = settings.PASSWORD_RESET_LIMIT
    for attempt in range(limit):
        response = ask_for_reset("dora@example.com", address=f"203.0.113.{attempt}")
        assert response.status_code == 302
    throttled = ask_for_reset("Dora@example.com", address="192.0.2.50")
    assert throttled.status_code == 429
    assert RESET_THROTTLED in throttled.text
    assert f"paused for {settings.LOGIN_COOLOFF_MINUTES} minutes" in throttled.text
    assert len(mail.outbox) == limit
    # Another address from the same network is not affected.
    assert ask_for_reset("other@example.com", address="192.0.2.50").status_code == 302


def test_reset_requests_from_one_client_are_throttled(dora, settings):
    """Unknown addresses count like known ones (nothing to learn from the limit)."""
    for number in range(settings.PASSWORD_RESET_LIMIT):
        assert ask_for_reset(f"nobody{number}@example.com").status_code == 302
    throttled = ask_for_reset("dora@example.com")
    assert throttled.status_code == 429
    assert RESET_THROTTLED in throttled.text
    assert mail.outbox == []
    assert ask_for_reset("dora@example.com", address="192.0.2.9").status_code == 302


def test_the_reset_throttle_ends_after_the_cooloff(dora, settings):
    for _ in range(settings.PASSWORD_RESET_LIMIT):
        ask_for_reset("dora@example.com")
    assert ask_for_reset("dora@example.com").status_code == 429
    earlier = timedelta(minutes=settings.LOGIN_COOLOFF_MINUTES, seconds=1)
    for request in PasswordResetRequest.objects.all():
        request.requested_at -= earlier
        request.save(update_fields=["requested_at"])
    assert ask_for_reset("dora@example.com").status_code == 302
    # Requests older than the window are deleted as new ones come in.
    assert PasswordResetRequest.objects.count() == 1


def test_reset_requests_store_no_email_address(dora):
    ask_for_reset("dora@example.com")
    (request,) = PasswordResetRequest.objects.values("client_ip", "address_key")
    assert request["client_ip"] == "198.51.100.7"
    assert "dora" not in request["address_key"]
    assert len(request["address_key"]) == 64


def test_a_malformed_reset_request_is_a_400_and_not_counted(db):
    response = ask_for_reset("not an address")
    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert PasswordResetRequest.objects.count() == 0


# -- closing the account ----------------------------------------------------------


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
    alice = make_user("alice", email="alice@example.com")
    here, elsewhere = login("alice", PASSWORD), login("alice", PASSWORD)
    response = close(here)
    assert response.status_code == 302
    assert response["Location"] == "/"
    page = here.get("/", follow=True)
    assert "The account “alice” is closed." in page.text
    assert logged_in_as(here) is None
    assert logged_in_as(elsewhere) is None

    refused = Client().post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD}
    )
    assert refused.status_code == 200
    assert "Your username and password didn't match." in refused.text
    assert refused.wsgi_request.user.is_anonymous

    alice.refresh_from_db()
    assert not alice.is_active
    assert not alice.has_usable_password()
    assert alice.email == ""
    # No reset email for a closed account (it has no address any more).
    assert ask_for_reset("alice@example.com").status_code == 302
    assert mail.outbox == []


def test_a_closed_name_cannot_be_registered_again(alice):
    services.close_account(user=alice)
    for name in ("alice", "ALICE"):
        response = signup(name)
        assert response.status_code == 400
        assert "A user with that username already exists." in response.text
    assert User.objects.filter(username__iexact="alice").count() == 1


def test_the_email_address_of_a_closed_account_can_be_used_again(make_user):
    alice = make_user("alice", email="alice@example.com")
    services.close_account(user=alice)
    assert signup("alison", "alice@example.com").status_code == 302


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

    services.close_account(user=alice)

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
    services.close_account(user=alice)
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
    services.close_account(user=alice)
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
    services.close_account(user=alice)
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
    services.close_account(user=alice)
    after = dict(Game.objects.values_list("pk", "updated_at"))
    theirs = set(Game.objects.of(alice).values_list("pk", flat=True))
    assert len(theirs) == 11
    assert {pk for pk in after if after[pk] > before[pk]} == theirs
    assert after[others.pk] == before[others.pk]


def test_closing_a_closed_account_changes_nothing(alice, bob, alice_history):
    services.close_account(user=alice)
    games = list(Game.objects.order_by("pk").values())
    services.close_account(user=alice)
    assert list(Game.objects.order_by("pk").values()) == games


def test_staff_see_closed_accounts_in_the_admin(client_for, alice, bob, make_user):
    root = make_user("root", is_staff=True, is_superuser=True)
    services.close_account(user=alice)
    admin = client_for(root)
    closed = admin.get("/admin/auth/user/?account=closed")
    assert closed.status_code == 200
    assert ">alice</a>" in closed.text
    assert ">bob</a>" not in closed.text
    assert "Closed" in closed.text
    open_ = admin.get("/admin/auth/user/?account=open")
    assert ">alice</a>" not in open_.text
    assert ">bob</a>" in open_.text


def test_the_admin_refuses_an_email_address_in_use(client_for, alice, make_user):
    root = make_user("root", is_staff=True, is_superuser=True)
    make_user("dora", email="dora@example.com")
    page = client_for(root).post(
        f"/admin/auth/user/{alice.pk}/change/",
        {
            "username": "alice",
            "email": "DORA@example.com",
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert page.status_code == 200
    assert EMAIL_TAKEN in page.text
    alice.refresh_from_db()
    assert alice.email == ""


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/accounts/signup/", "GET, HEAD, POST"),
        ("/accounts/password_change/", "GET, HEAD, POST"),
        ("/accounts/password_change/done/", "GET, HEAD"),
        ("/accounts/password_reset/", "GET, HEAD, POST"),
        ("/accounts/password_reset/done/", "GET, HEAD"),
        ("/accounts/reset/MQ/set-password/", "GET, HEAD, POST"),
        ("/accounts/reset/done/", "GET, HEAD"),
        ("/accounts/email/", "GET, HEAD, POST"),
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
        assert f"This address only accepts {allow} requests." in response.text
    alice.refresh_from_db()
    assert alice.is_active


def test_a_game_cannot_start_against_an_account_closed_meanwhile(alice, bob):
    """The opponent was looked up before the account closed: create_game
    re-reads the locked row (the lock that orders it with close_account)."""
    seen_before = User.objects.get(pk=alice.pk)
    services.close_account(user=alice)
    with pytest.raises(services.PlayerLeft):
        services.create_game(creator=bob, opponent=seen_before)
    assert not Game.objects.exists()
