"""Invitation links (games.services.create_invitation, join_invitation): an open
game only the holder of its link may join, not listed among open games."""

import hmac
import re

import pytest
from django.test import Client

from games import refusals, services
from games.models import Game, GameStatus, Invitation

from ..conftest import snapshot_tables

LINK = re.compile(r'value="(http://testserver/invitations/(\d+)/([\w-]+)/)"')


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def invitation(alice) -> Invitation:
    """alice invites someone to play O (she plays X)."""
    return services.create_invitation(creator=alice, side="x")


def path_of(invitation: Invitation) -> str:
    return f"/invitations/{invitation.game_id}/{invitation.secret}/"


def test_the_form_makes_an_invitation_whose_link_the_game_page_shows(as_alice, alice):
    response = as_alice.post(
        "/games/new/", {"opponent": "", "side": "o", "invite": "1"}
    )
    game = Game.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    assert (game.status, game.player_o, game.player_x) == (
        GameStatus.WAITING,
        alice,
        None,
    )
    secret = Invitation.objects.get(game=game).secret
    assert len(secret) == 43  # 32 random bytes, URL-safe base64
    page = as_alice.get(f"/games/{game.pk}/")
    url, game_id, shown = LINK.search(text(page)).groups()
    assert (int(game_id), shown) == (game.pk, secret)
    assert "data-copy-invitation" in text(page)
    assert 'src="/static/games/invite.js"' in text(page)


def test_secrets_differ_between_invitations(alice):
    secrets = {services.create_invitation(creator=alice).secret for _ in range(5)}
    assert len(secrets) == 5


def test_only_the_creator_sees_the_link(invitation, as_bob, client_for, carol):
    game_page = f"/games/{invitation.game_id}/"
    for client in (as_bob, client_for(carol)):
        response = client.get(game_page)
        assert response.status_code == 200
        assert invitation.secret not in text(response)
        # Not joinable from its page either: only through the link.
        assert f"/games/{invitation.game_id}/join/" not in text(response)


def test_an_opponent_and_the_invite_box_are_refused_together(as_alice, bob):
    response = as_alice.post(
        "/games/new/", {"opponent": "bob", "side": "x", "invite": "1"}
    )
    assert response.status_code == 400
    assert "Leave the opponent blank to invite someone by link." in text(response)
    assert not Game.objects.exists()


def test_invitations_are_not_listed_among_open_games(invitation, as_bob, alice):
    services.create_game(creator=alice)  # a public open game, listed
    response = as_bob.get("/")
    assert text(response).count("Join game ") == 1
    assert f"Join game {invitation.game_id}" not in text(response)
    assert f"Game {invitation.game_id} by" not in text(response)


def test_invitations_count_towards_the_open_game_limit(as_alice, alice, settings):
    settings.GAMES_MAX_OPEN_PER_USER = 2
    services.create_game(creator=alice)
    services.create_invitation(creator=alice)
    before = snapshot_tables()
    response = as_alice.post("/games/new/", {"opponent": "", "invite": "1"})
    assert response.status_code == 429
    assert "You already have 2 open games waiting for players." in text(response)
    assert snapshot_tables() == before
    assert Invitation.objects.count() == 1
    with pytest.raises(refusals.TooManyOpenGames):
        services.create_game(creator=alice)


def test_the_link_says_who_invites_and_which_side(
    invitation, as_bob, django_assert_num_queries
):
    # user, the game with its players and invitation, whether alice blocked bob
    with django_assert_num_queries(3):
        response = as_bob.get(path_of(invitation))
    assert response.status_code == 200
    assert "<h1>alice invites you to play</h1>" in text(response)
    assert "You play <strong>O</strong>; alice plays X and moves first." in text(
        response
    )
    assert (
        f'action="/invitations/{invitation.game_id}/{invitation.secret}/join/"'
        in text(response)
    )


def test_joining_by_the_link_starts_the_game(invitation, as_bob, alice, bob):
    response = as_bob.post(path_of(invitation) + "join/")
    game = Game.objects.get(pk=invitation.game_id)
    assert response.status_code == 302
    assert response["Location"] == f"/games/{game.pk}/"
    assert (game.status, game.player_x, game.player_o) == (
        GameStatus.IN_PROGRESS,
        alice,
        bob,
    )
    assert game.version == 2


def test_a_visitor_not_logged_in_is_sent_to_log_in_and_back(invitation, db):
    path = path_of(invitation)
    response = Client().get(path)
    assert response.status_code == 200
    assert "<h1>alice invites you to play</h1>" in text(response)
    assert f'href="/accounts/login/?next={path.replace("/", "%2F")}"' in text(response)
    assert f'href="/accounts/signup/?next={path.replace("/", "%2F")}"' in text(response)
    assert "/join/" not in text(response)


def test_logging_in_from_the_invitation_comes_back_to_it(invitation, bob):
    from ..conftest import PASSWORD

    path = path_of(invitation)
    client = Client()
    response = client.post(
        f"/accounts/login/?next={path}", {"login": "bob", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"] == path
    assert client.post(path + "join/").status_code == 302
    assert Game.objects.get(pk=invitation.game_id).player_o == bob


@pytest.mark.parametrize(
    ("end", "message"),
    [
        ("join", "This invitation has been used: someone already joined the game."),
        (
            "withdraw",
            "This invitation was withdrawn: the game was aborted before anyone joined.",
        ),
    ],
)
def test_a_used_or_withdrawn_link_answers_410(
    invitation, alice, bob, carol, client_for, end, message
):
    if end == "join":
        services.join_invitation(
            game_id=invitation.game_id, secret=invitation.secret, user=bob
        )
    else:
        services.abort(game_id=invitation.game_id, user=alice)
    before = snapshot_tables()
    for client in (Client(), client_for(carol), client_for(bob)):
        response = client.get(path_of(invitation))
        assert response.status_code == 410
        assert message in text(response)
    response = client_for(carol).post(path_of(invitation) + "join/")
    assert response.status_code == 410
    assert message in text(response)
    assert snapshot_tables() == before


def test_an_aborted_game_closes_its_link(invitation, alice, bob, as_bob):
    """Abort after the join, before any move: the link stays closed (410)."""
    services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=bob
    )
    services.abort(game_id=invitation.game_id, user=bob)
    assert as_bob.get(path_of(invitation)).status_code == 410


@pytest.mark.parametrize(
    "path",
    [
        # Right game, wrong secret of the right length: compared, not found.
        "/invitations/{id}/" + "A" * 43 + "/",
        "/invitations/{id}/short/",
        # A game that is not an invitation, and one that does not exist.
        "/invitations/{open_id}/{secret}/",
        "/invitations/999999/{secret}/",
        "/invitations/99999999999999999999999/{secret}/",
    ],
)
def test_a_link_that_never_existed_answers_404(invitation, alice, as_bob, path):
    open_game = services.create_game(creator=alice)
    path = path.format(
        id=invitation.game_id, open_id=open_game.pk, secret=invitation.secret
    )
    before = snapshot_tables()
    for method in ("get", "post"):
        suffix = "join/" if method == "post" else ""
        response = getattr(as_bob, method)(path + suffix)
        assert response.status_code == 404
        assert "There is no such invitation: check the link you were sent." in text(
            response
        )
    assert snapshot_tables() == before


def test_the_secret_is_compared_in_constant_time(invitation, monkeypatch):
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    with pytest.raises(refusals.InvitationNotFound):
        services.invited_game(game_id=invitation.game_id, secret="B" * 43)
    assert compared == [(invitation.secret.encode(), b"B" * 43)]


def test_an_invitation_cannot_be_joined_without_its_link(invitation, as_bob):
    before = snapshot_tables()
    response = as_bob.post(f"/games/{invitation.game_id}/join/")
    assert response.status_code == 403
    assert "This game is by invitation only: join it with the link you were sent." in (
        text(response)
    )
    assert snapshot_tables() == before


def test_the_creator_cannot_join_their_own_invitation(invitation, as_alice):
    page = as_alice.get(path_of(invitation))
    assert page.status_code == 200
    assert "This is your own invitation" in text(page)
    assert "/join/" not in text(page)
    before = snapshot_tables()
    response = as_alice.post(path_of(invitation) + "join/")
    assert response.status_code == 409
    assert "You created this game: share its address with an opponent." in text(
        response
    )
    assert snapshot_tables() == before


def test_the_link_disappears_from_the_game_page_once_joined(invitation, as_alice, bob):
    services.join_invitation(
        game_id=invitation.game_id, secret=invitation.secret, user=bob
    )
    response = as_alice.get(f"/games/{invitation.game_id}/")
    assert invitation.secret not in text(response)
    live = as_alice.get(f"/games/{invitation.game_id}/live/")
    assert invitation.secret not in text(live)


def test_the_live_part_shows_the_link_to_the_creator(invitation, as_alice, as_bob):
    live = as_alice.get(f"/games/{invitation.game_id}/live/")
    assert LINK.search(text(live)).group(3) == invitation.secret
    assert invitation.secret not in text(
        as_bob.get(f"/games/{invitation.game_id}/live/")
    )


def test_a_waiting_invitations_page_reads_it_in_one_query(
    invitation, as_alice, as_bob, django_assert_num_queries
):
    """A waiting game's page reads its invitation, if any (one query, as for
    any waiting game: it decides whether the page offers to join); the page
    that shows the link is rendered for each request (it holds the host)."""
    game_page = f"/games/{invitation.game_id}/"
    for _ in range(2):  # never from the page cache
        # user, the game with its players and series, its invitation
        with django_assert_num_queries(3):
            assert invitation.secret in text(as_alice.get(game_page))
    with django_assert_num_queries(3):
        assert invitation.secret not in text(as_bob.get(game_page))
    # From the page cache, a spectator's page does not read the invitation.
    with django_assert_num_queries(2):
        assert invitation.secret not in text(as_bob.get(game_page))
