"""Guests (accounts.guests, games.guest_views): a visitor plays from an invitation
or open-game link in one POST, as an account marked "(guest)" everywhere, that
starts no game of its own and has no password or address."""

import re

import pytest
from allauth.account.models import EmailAddress
from allauth.usersessions.models import UserSession
from django.contrib.auth import SESSION_KEY, get_user_model
from django.core import mail
from django.test import Client

from accounts.models import Guest, UsernameKey
from games import refusals, services
from games.models import Game, GameStatus

from ..conftest import snapshot_tables

NAME_FIELD = re.compile(r'name="name" value="([^"]*)"')


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def invitation(alice):
    return services.create_invitation(creator=alice, side="x")


def path_of(invitation) -> str:
    return f"/invitations/{invitation.game_id}/{invitation.secret}/"


def play_as_guest(client, invitation, name="bob-guest"):
    return client.post(path_of(invitation) + "guest/", {"name": name})


@pytest.fixture
def guest_game(invitation):
    """A visitor joined alice's invitation as the guest "bob-guest"."""
    client = Client()
    response = play_as_guest(client, invitation)
    assert response.status_code == 302
    return client, Game.objects.get(pk=invitation.game_id)


def test_the_invitation_offers_play_as_guest_with_a_free_name(invitation, make_user):
    make_user("guest-taken")
    response = Client().get(path_of(invitation))
    assert response.status_code == 200
    page = text(response)
    assert f'action="{path_of(invitation)}guest/"' in page
    assert ">Play as guest</button>" in page
    assert ">Log in</a>" in page
    assert ">Sign up</a>" in page
    (suggested,) = NAME_FIELD.findall(page)
    assert re.fullmatch(r"guest-[a-z]+\d+", suggested)
    assert not get_user_model().objects.filter(username__iexact=suggested).exists()


def test_one_post_makes_the_guest_logs_in_and_joins(invitation, alice):
    client = Client()
    client.get(path_of(invitation))
    response = play_as_guest(client, invitation, "Bob")
    assert response.status_code == 302
    assert response["Location"] == f"/games/{invitation.game_id}/"
    user = get_user_model().objects.get(username="Bob")
    assert Guest.objects.filter(user=user).exists()
    assert not user.has_usable_password()
    assert user.email == ""
    assert UsernameKey.objects.get(user=user).key == "bob"
    game = Game.objects.get(pk=invitation.game_id)
    assert (game.status, game.player_x, game.player_o) == (
        GameStatus.IN_PROGRESS,
        alice,
        user,
    )
    assert client.session[SESSION_KEY] == str(user.pk)
    # Logged in as a password login is: allauth lists the browser, Django
    # recorded the login.
    assert UserSession.objects.filter(user=user).count() == 1
    user.refresh_from_db()
    assert user.last_login is not None
    page = client.get(response["Location"])
    assert page.status_code == 200
    body = text(page)
    assert "You joined the game as a guest." in body
    assert "Signed in as <strong>Bob</strong> (guest)" in body
    assert ">Bob (guest)</a>" in body


@pytest.mark.parametrize("name", ["ALICE", "alice", "Alice", "ＡＬＩＣＥ", "ａlice"])
def test_a_taken_name_in_any_case_or_unicode_form_is_refused(invitation, name):
    before = snapshot_tables()
    response = play_as_guest(Client(), invitation, name)
    assert response.status_code == 400
    assert "A user with that username already exists." in text(response)
    assert f'name="name" value="{name}"' in text(response)
    assert snapshot_tables() == before
    assert not Guest.objects.exists()


def test_a_used_invitation_leaves_no_guest_behind(invitation, carol):
    services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=carol
    )
    users = get_user_model().objects.count()
    response = play_as_guest(Client(), invitation, "late-bob")
    assert response.status_code == 410
    assert "This invitation has been used: someone already joined the game." in text(
        response
    )
    assert get_user_model().objects.count() == users
    assert not Guest.objects.exists()


def test_a_join_refused_inside_the_transaction_takes_the_guest_back(
    invitation, monkeypatch
):
    """The join fails after the account was written: both are rolled back."""

    def refuse(**kwargs):
        raise refusals.GameFull()

    monkeypatch.setattr(services, "join_invitation", refuse)
    users = get_user_model().objects.count()
    response = play_as_guest(Client(), invitation, "racing-bob")
    assert response.status_code == 409
    assert get_user_model().objects.count() == users
    assert not UsernameKey.objects.filter(key="racing-bob").exists()


def test_the_guest_cannot_log_in_by_password_nor_reset_one(guest_game):
    client = Client()
    for password in ("", "!", "password"):
        response = client.post(
            "/accounts/login/", {"login": "bob-guest", "password": password}
        )
        assert response.status_code == 400
        assert SESSION_KEY not in client.session
    # A reset goes by email address, and a guest has none: their name is no
    # address, and any address gets the mail that says no account has it.
    response = client.post("/accounts/password/reset/", {"email": "bob-guest"})
    assert response.status_code == 400
    assert mail.outbox == []
    response = client.post(
        "/accounts/password/reset/", {"email": "bob-guest@example.com"}
    )
    assert response.status_code == 302
    assert [message.to for message in mail.outbox] == [["bob-guest@example.com"]]
    assert "/accounts/password/reset/key/" not in mail.outbox[0].body
    guest = get_user_model().objects.get(username="bob-guest")
    assert not guest.has_usable_password()
    assert not EmailAddress.objects.filter(user=guest).exists()


def test_the_guest_mark_shows_everywhere_a_name_shows(guest_game, alice, client_for):
    _, game = guest_game
    as_alice = client_for(alice)
    game_page = text(as_alice.get(f"/games/{game.pk}/"))
    assert f"Game {game.pk}: alice vs bob-guest (guest)" in game_page
    assert ">bob-guest (guest)</a>" in game_page
    live = text(as_alice.get(f"/games/{game.pk}/live/"))
    assert ">bob-guest (guest)</a>" in live
    lobby = text(as_alice.get("/"))
    assert "bob-guest (guest)" in lobby
    lists = text(as_alice.get("/lobby/live/"))
    assert "bob-guest (guest)" in lists
    player = text(as_alice.get("/players/bob-guest/"))
    assert "<h1>bob-guest (guest)</h1>" in player
    # The admin's and shell's text names by username: marks are the pages' own.
    assert str(game) == f"Game {game.pk}: alice vs bob-guest"


def test_a_finished_game_keeps_the_mark_in_records(guest_game, alice, client_for):
    client, game = guest_game
    for cells, player in (((0, 0), alice), ((1, 0), None), ((0, 1), alice)):
        row, col = cells
        if player is None:
            assert (
                client.post(
                    f"/games/{game.pk}/move/", {"row": row, "col": col}
                ).status_code
                == 302
            )
        else:
            services.play_move(game_id=game.pk, user=player, row=row, col=col)
    services.forfeit(
        game_id=game.pk, user=get_user_model().objects.get(username="bob-guest")
    )
    page = text(client_for(alice).get("/players/alice/"))
    assert "bob-guest (guest)" in page
    archive = text(client_for(alice).get("/games/archive/"))
    assert "bob-guest (guest)" in archive


def test_the_admin_lists_guests_with_a_filter(guest_game, make_user, client_for):
    client = client_for(make_user("boss", is_staff=True, is_superuser=True))
    response = client.get("/admin/auth/user/?guest=yes")
    assert response.status_code == 200
    body = text(response)
    assert "bob-guest" in body
    assert ">alice<" not in body
    response = client.get("/admin/auth/user/?guest=no")
    assert "bob-guest" not in text(response)


def test_a_guest_plays_and_rematches_but_starts_no_game(guest_game, alice):
    client, game = guest_game
    before = Game.objects.count()
    response = client.post("/games/new/", {"opponent": "", "side": "x"})
    assert response.status_code == 403
    assert "Keep this account (choose a password) to start games" in text(response)
    response = client.post("/games/new/", {"opponent": "", "side": "x", "invite": "1"})
    assert response.status_code == 403
    assert Game.objects.count() == before
    lobby = text(client.get("/"))
    assert 'action="/games/new/"' not in lobby
    assert "Open games" not in lobby
    assert f"/games/{game.pk}/" in lobby
    services.forfeit(game_id=game.pk, user=alice)
    response = client.post(f"/games/{game.pk}/rematch/")
    assert response.status_code == 302
    assert Game.objects.count() == before + 1


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/email/",
        "/accounts/password/change/",
        "/accounts/password/set/",
        "/accounts/reauthenticate/",
        "/accounts/data/",
    ],
)
def test_a_guest_adds_no_address_sets_no_password_takes_no_data(guest_game, path):
    """Each sends the guest to keep the account first (accounts.guests); the
    data download takes GET only, and a method is refused before anyone's
    account is looked at (tictactoe_site.ops.middleware.refuse_before_views)."""
    client, _ = guest_game
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/keep/"
    posted = client.post(path, {"email": "bob@example.com", "action_add": "1"})
    if path == "/accounts/data/":
        assert (posted.status_code, posted["Allow"]) == (405, "GET, HEAD")
    else:
        assert posted.status_code == 302
        assert posted["Location"] == "/accounts/keep/"
    assert not get_user_model().objects.get(username="bob-guest").email
    assert not EmailAddress.objects.exists()


def test_a_guest_accepts_another_invitation(guest_game, carol):
    client, _ = guest_game
    other = services.create_invitation(creator=carol, side="o")
    response = client.post(path_of(other) + "join/")
    assert response.status_code == 302
    game = Game.objects.get(pk=other.game_id)
    assert game.player_x.username == "bob-guest"


def test_a_guest_blocks(guest_game, carol):
    client, _ = guest_game
    response = client.post("/players/carol/block/")
    assert response.status_code == 302


def test_an_open_game_link_offers_play_as_guest(alice):
    game = services.create_game(creator=alice, side="o")
    client = Client()
    page = client.get(f"/games/{game.pk}/")
    assert page.status_code == 200
    assert "alice is looking for an opponent" in text(page)
    assert f'action="/games/{game.pk}/guest/"' in text(page)
    response = client.post(f"/games/{game.pk}/guest/", {"name": "visitor"})
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    game.refresh_from_db()
    assert game.player_x.username == "visitor"
    assert game.status == GameStatus.IN_PROGRESS


def test_other_games_still_send_a_visitor_to_log_in(alice):
    # An invitation's game page (its link is the way in); a started game is
    # public by link (tests/games/test_public_games.py).
    game = services.create_invitation(creator=alice).game
    response = Client().get(f"/games/{game.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/games/{game.pk}/"


def test_guest_creation_is_limited_per_address(settings, alice):
    settings.GAMES_GUEST_CREATE_LIMIT = 3
    invitations = [services.create_invitation(creator=alice) for _ in range(4)]
    statuses = [
        play_as_guest(Client(), invitation, f"limited{number}").status_code
        for number, invitation in enumerate(invitations)
    ]
    assert statuses == [302, 302, 302, 429]
    refused = play_as_guest(Client(), invitations[3], "limited9")
    assert refused.status_code == 429
    assert "3 guest names were tried from your network in the last 60 minutes" in (
        text(refused)
    )
    assert 3500 < int(refused["Retry-After"]) <= 3600
    assert Guest.objects.count() == 3


def test_names_probed_count_against_the_limit(settings, alice, make_user):
    """Whether a name is taken was answered for any name without limit (seen:
    60 probes, no 429). Each name tried counts, taken, refused or made, on an
    invitation or an open game alike; past the limit a taken name gets the 429
    with the wait, not "already exists", and nothing is made."""
    settings.GAMES_GUEST_CREATE_LIMIT = 3
    make_user("taken")
    invitation = services.create_invitation(creator=alice)
    open_game = services.create_game(creator=alice, side="o")
    probes = [
        play_as_guest(Client(), invitation, "taken"),
        play_as_guest(Client(), invitation, "bad name!"),
        Client().post(f"/games/{open_game.pk}/guest/", {"name": "TAKEN"}),
    ]
    assert [probe.status_code for probe in probes] == [400, 400, 400]
    assert "A user with that username already exists." in text(probes[0])
    assert "A user with that username already exists." in text(probes[2])
    users, before = get_user_model().objects.count(), snapshot_tables()
    for refused in (
        play_as_guest(Client(), invitation, "taken"),
        Client().post(f"/games/{open_game.pk}/guest/", {"name": "taken"}),
        play_as_guest(Client(), invitation, "free-name"),
    ):
        assert refused.status_code == 429
        assert (
            "3 guest names were tried from your network in the last 60 minutes. "
            "Please wait 60 minutes and try again, or log in." in text(refused)
        )
        assert "already exists" not in text(refused)
        assert 3500 < int(refused["Retry-After"]) <= 3600
    assert get_user_model().objects.count() == users
    assert snapshot_tables() == before
    assert not Guest.objects.exists()


def test_a_kept_account_shows_unmarked_at_once(
    guest_game, alice, client_for, monkeypatch, django_capture_on_commit_callbacks
):
    """Keeping the account (accounts.services.keep_account): no page, cached
    or live, keeps the mark."""
    from accounts import services as account_services
    from games import live

    _, game = guest_game
    as_alice = client_for(alice)
    for path in (f"/games/{game.pk}/", f"/games/{game.pk}/live/", "/", "/lobby/live/"):
        assert "bob-guest (guest)" in text(as_alice.get(path))
    published = []
    monkeypatch.setattr(live, "publish", published.append)
    bob = get_user_model().objects.get(username="bob-guest")
    with django_capture_on_commit_callbacks(execute=True):
        account_services.keep_account(
            user=bob, username="bob-guest", password="a new passphrase 8k"
        )
    assert not Guest.objects.filter(user=bob).exists()
    game_after = Game.objects.get(pk=game.pk)
    assert game_after.version == game.version + 1
    changes = [change for change in published if isinstance(change, live.Change)]
    assert [(change.game_id, change.version) for change in changes] == [
        (game.pk, game.version + 1)
    ]
    for path in (f"/games/{game.pk}/", f"/games/{game.pk}/live/", "/", "/lobby/live/"):
        page = text(as_alice.get(path))
        assert "bob-guest" in page
        assert "(guest)" not in page


def test_a_guest_gets_no_turn_emails(guest_game):
    client, _ = guest_game
    response = client.post("/accounts/turn-email/", {"enabled": "on"})
    assert response.status_code == 400
    assert "Confirm an email address first" in text(response)


def test_the_limit_counts_an_ipv6_network_as_one_address(settings, alice):
    settings.GAMES_GUEST_CREATE_LIMIT = 1
    invitations = [services.create_invitation(creator=alice) for _ in range(3)]
    addresses = ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:db8:1:3::1"]
    answers = [
        Client(REMOTE_ADDR=address).post(
            path_of(invitation) + "guest/", {"name": f"six{number}"}
        )
        for number, (address, invitation) in enumerate(
            zip(addresses, invitations, strict=True)
        )
    ]
    assert [answer.status_code for answer in answers] == [302, 429, 302]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "This field is required."),
        ("x" * 151, "Ensure this value has at most 150 characters (it has 151)."),
        ("bad name!", "Enter a valid username."),
    ],
)
def test_a_name_sign_up_would_refuse_is_refused(invitation, name, message):
    before = snapshot_tables()
    response = play_as_guest(Client(), invitation, name)
    assert response.status_code == 400
    assert message in text(response)
    assert snapshot_tables() == before
