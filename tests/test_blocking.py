"""Blocking (games.services.block_player, unblock_player): a blocked person can
start no game with the blocker, does not see or join their open games and cannot
use their invitation links; games already running and records are untouched."""

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from games import exceptions, services
from games.models import Block, Game, GameStatus, PlayerRecord, PlayerResult

from .conftest import X_WINS_ROW_0, snapshot_tables

REFUSED = "alice does not accept challenges from you."


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def alice_blocks_bob(alice, bob):
    services.block_player(blocker=alice, blocked=bob)


def blocks() -> list[tuple[str, str]]:
    return list(
        Block.objects.order_by("pk").values_list(
            "blocker__username", "blocked__username"
        )
    )


# -- the player page -----------------------------------------------------------


def test_block_and_unblock_from_the_player_page(as_alice, alice, bob):
    page = as_alice.get("/players/bob/")
    assert 'action="/players/bob/block/"' in text(page)
    response = as_alice.post("/players/bob/block/")
    assert response.status_code == 302
    assert response["Location"] == "/players/bob/"
    assert blocks() == [("alice", "bob")]
    page = as_alice.get("/players/bob/")
    assert "You blocked bob: they cannot start games with you" in text(page)
    assert 'action="/players/bob/unblock/"' in text(page)
    # Twice is once.
    assert as_alice.post("/players/bob/block/").status_code == 302
    assert blocks() == [("alice", "bob")]
    response = as_alice.post("/players/bob/unblock/")
    assert response.status_code == 302
    assert response["Location"] == "/players/bob/"
    assert blocks() == []
    assert "You unblocked bob." in text(as_alice.get("/players/bob/"))
    assert as_alice.post("/players/bob/unblock/").status_code == 302
    assert blocks() == []


def test_you_cannot_block_yourself(as_alice, alice):
    assert 'action="/players/alice/block/"' not in text(as_alice.get("/players/alice/"))
    response = as_alice.post("/players/alice/block/")
    assert response.status_code == 400
    assert "You cannot block yourself." in text(response)
    assert blocks() == []


def test_the_database_refuses_a_self_block_and_a_duplicate(alice, bob):
    Block.objects.create(blocker=alice, blocked=bob)
    for blocked in (alice, bob):
        with pytest.raises(IntegrityError), transaction.atomic():
            Block.objects.create(blocker=alice, blocked=blocked)


def test_blocking_an_unknown_player_is_404(as_alice, alice):
    response = as_alice.post("/players/nobody/block/")
    assert response.status_code == 404
    assert "There is no player called “nobody”." in text(response)


def test_your_own_page_lists_whom_you_blocked(
    as_alice, alice, bob, carol, make_user, django_assert_num_queries
):
    assert '<h2 id="blocked-heading">People you blocked</h2>' in text(
        as_alice.get("/players/alice/")
    )
    for user in (bob, carol, make_user("dave")):
        services.block_player(blocker=alice, blocked=user)
    services.block_player(blocker=bob, blocked=carol)  # not alice's
    assert [block.blocked.username for block in Block.objects.blocked_by(alice)] == [
        "dave",
        "carol",
        "bob",
    ]
    # session, user, record, streak, recent, head-to-head, blocks
    with django_assert_num_queries(7):
        page = as_alice.get("/players/alice/")
    for name in ("bob", "carol", "dave"):
        assert f'action="/players/{name}/unblock/"' in text(page)
    assert text(page).count("/unblock/") == 3
    # Another's page: whether you blocked them, one query too.
    with django_assert_num_queries(7):
        assert "Unblock bob" in text(as_alice.get("/players/bob/"))
    assert "People you blocked" not in text(as_alice.get("/players/bob/"))


def test_anonymous_visitors_are_sent_to_log_in(alice, bob):
    for path in ("/players/bob/block/", "/players/bob/unblock/"):
        response = Client().post(path)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={path}"
    assert blocks() == []


# -- what a block refuses ------------------------------------------------------


@pytest.mark.usefixtures("alice_blocks_bob")
def test_a_blocked_person_cannot_challenge_the_blocker(as_bob, alice, bob):
    before = snapshot_tables()
    response = as_bob.post("/games/new/", {"opponent": "alice", "side": "x"})
    assert response.status_code == 403
    assert REFUSED in text(response)
    assert snapshot_tables() == before
    with pytest.raises(exceptions.Blocked, match=f"^{REFUSED}$"):
        services.create_game(creator=bob, opponent=alice)


@pytest.mark.usefixtures("alice_blocks_bob")
def test_a_block_is_one_way(as_alice, alice, bob):
    """The blocker may still challenge the person they blocked."""
    response = as_alice.post("/games/new/", {"opponent": "bob", "side": "x"})
    assert response.status_code == 302
    assert Game.objects.get().player_o == bob


def test_a_blocked_person_cannot_join_the_blockers_open_game(as_bob, alice, bob):
    game = services.create_game(creator=alice, side="o")
    services.block_player(blocker=alice, blocked=bob)
    before = snapshot_tables()
    response = as_bob.post(f"/games/{game.pk}/join/")
    assert response.status_code == 403
    assert REFUSED in text(response)
    assert snapshot_tables() == before


def test_a_blocked_person_cannot_use_the_blockers_invitation(as_bob, alice, bob):
    invitation = services.create_invitation(creator=alice)
    services.block_player(blocker=alice, blocked=bob)
    path = f"/invitations/{invitation.game_id}/{invitation.secret}/"
    page = as_bob.get(path)
    assert page.status_code == 403
    assert REFUSED in text(page)
    assert "/join/" not in text(page)
    before = snapshot_tables()
    response = as_bob.post(path + "join/")
    assert response.status_code == 403
    assert REFUSED in text(response)
    assert snapshot_tables() == before
    services.unblock_player(blocker=alice, blocked=bob)
    assert as_bob.post(path + "join/").status_code == 302
    assert Game.objects.get(pk=invitation.game_id).player_o == bob


def test_running_games_continue_and_records_stay(alice, bob, play):
    finished = play(services.create_game(creator=alice, opponent=bob), *X_WINS_ROW_0)
    running = services.create_game(creator=bob, opponent=alice, side="x")
    services.play_move(game_id=running.pk, user=bob, row=0, col=0)
    records = list(PlayerRecord.objects.order_by("pk").values())
    results = list(PlayerResult.objects.order_by("pk").values())
    services.block_player(blocker=alice, blocked=bob)
    assert list(PlayerRecord.objects.order_by("pk").values()) == records
    assert list(PlayerResult.objects.order_by("pk").values()) == results
    finished.refresh_from_db()
    assert finished.status == GameStatus.X_WON
    running = play(running, (1, 1), (0, 1), (2, 2), (0, 2))
    assert running.status == GameStatus.X_WON
    assert running.player_x == bob


# -- the lobby -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/lobby/live/"])
def test_the_lobby_hides_the_blockers_open_games_while_blocked(
    as_bob, alice, bob, carol, path
):
    """Through the page cache (on in the tests): the lobby's key must move."""
    alices = services.create_game(creator=alice)
    carols = services.create_game(creator=carol)
    shown = f"Join game {alices.pk}"
    assert shown in text(as_bob.get(path))
    assert shown in text(as_bob.get(path))  # from the cache
    services.block_player(blocker=alice, blocked=bob)
    page = text(as_bob.get(path))
    assert shown not in page
    assert f"Join game {carols.pk}" in page
    services.unblock_player(blocker=alice, blocked=bob)
    assert shown in text(as_bob.get(path))


def test_blocking_moves_the_blocked_persons_lobby_version(alice, bob):
    services.create_game(creator=alice)
    before = Game.objects.lobby_version(bob)
    services.block_player(blocker=alice, blocked=bob)
    blocked = Game.objects.lobby_version(bob)
    assert blocked != before
    services.unblock_player(blocker=alice, blocked=bob)
    assert Game.objects.lobby_version(bob) not in (before, blocked)


@pytest.mark.usefixtures("alice_blocks_bob")
def test_others_still_see_the_blockers_open_games(client_for, alice, carol):
    game = services.create_game(creator=alice)
    assert f"Join game {game.pk}" in text(client_for(carol).get("/"))


# -- the admin -----------------------------------------------------------------


@pytest.mark.usefixtures("alice_blocks_bob")
def test_the_admin_lists_blocks_read_only(client_for, make_user):
    staff = client_for(make_user("root", is_staff=True, is_superuser=True))
    page = staff.get("/admin/games/block/")
    assert page.status_code == 200
    assert '<td class="field-blocked nowrap">bob</td>' in text(page)
    assert "/admin/games/block/add/" not in text(page)
    block = Block.objects.get()
    assert staff.get(f"/admin/games/block/{block.pk}/change/").status_code == 200
    before = blocks()
    response = staff.post(f"/admin/games/block/{block.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert blocks() == before
