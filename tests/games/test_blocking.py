"""Blocking (games.services.block_player, unblock_player): a blocked person can
start no game with the blocker, does not see or join their open games and cannot
use their invitation links; games already running and records are untouched."""

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from games import refusals, services
from games.live.hub import hub
from games.models import Block, Game, GameStatus, PlayerRecord, PlayerResult

from ..conftest import X_WINS_ROW_0, snapshot_tables
from ..support.asgi import Stream, run, sessionid
from ..support.bodies import comparable

REFUSED = "alice does not accept challenges from you."
NO_SUCH_GAME = "There is no such game."
MISSING = 999999  # no game has this id


def text(response) -> str:
    return response.content.decode()


def answer(response) -> tuple[int, str | None, bytes]:
    """Status, type and body, the CSRF token (masked afresh for every response)
    and the address asked for (which the language menu returns to) left out."""
    body = comparable(response.content, response.request["PATH_INFO"])
    return response.status_code, response.get("Content-Type"), body


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
    with pytest.raises(refusals.Blocked, match=f"^{REFUSED}$"):
        services.create_game(creator=bob, opponent=alice)


@pytest.mark.usefixtures("alice_blocks_bob")
def test_a_block_is_one_way(as_alice, alice, bob):
    """The blocker may still challenge the person they blocked."""
    response = as_alice.post("/games/new/", {"opponent": "bob", "side": "x"})
    assert response.status_code == 302
    assert Game.objects.get().player_o == bob


def test_a_blocked_person_cannot_join_the_blockers_open_game(as_bob, alice, bob):
    """Refused as if the game did not exist (below): the refusal does not show
    the game either."""
    game = services.create_game(creator=alice, side="o")
    services.block_player(blocker=alice, blocked=bob)
    before = snapshot_tables()
    response = as_bob.post(f"/games/{game.pk}/join/")
    assert answer(response) == answer(as_bob.post(f"/games/{MISSING}/join/"))
    assert response.status_code == 404
    assert NO_SUCH_GAME in text(response)
    assert snapshot_tables() == before
    with pytest.raises(refusals.Blocked, match=f"^{REFUSED}$"):
        services.join_game(game_id=game.pk, user=bob)


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


# -- the blocker's waiting games -------------------------------------------------

GAME_PATHS = [
    "/games/{}/",
    "/games/{}/?ply=0",
    "/games/{}/state.json",
    "/games/{}/live/",
]


@pytest.fixture(params=["open", "invitation"])
def waiting(request, alice):
    """A game of alice's waiting for an opponent: open, or an invitation."""
    if request.param == "invitation":
        return services.create_invitation(creator=alice, side="o").game
    return services.create_game(creator=alice, side="o")


@pytest.mark.parametrize("path", GAME_PATHS)
def test_the_blockers_waiting_game_is_not_found_by_the_blocked_person(
    as_bob, as_carol, alice, bob, waiting, path, django_assert_num_queries
):
    """Answered as for a game that does not exist, at no query more: the page,
    a replay, state.json and the live part, whether from the page cache or not."""
    seen_before = as_bob.get(path.format(waiting.pk))
    assert seen_before.status_code == 200  # and now in the page cache
    services.block_player(blocker=alice, blocked=bob)
    missing = as_bob.get(path.format(MISSING))
    with django_assert_num_queries(2):  # user, game
        hidden = as_bob.get(path.format(waiting.pk))
    assert answer(hidden) == answer(missing)
    assert hidden.status_code == 404
    assert NO_SUCH_GAME in text(hidden)
    # Everyone else sees it as before.
    assert as_carol.get(path.format(waiting.pk)).status_code == 200
    services.unblock_player(blocker=alice, blocked=bob)
    assert as_bob.get(path.format(waiting.pk)).status_code == 200


@pytest.mark.parametrize("path", GAME_PATHS)
def test_a_cached_page_never_reaches_the_blocked_person(client_for, alice, bob, path):
    """The block is checked before the page cache is asked: even with no version
    moved (a block written by hand), the page cached for bob stays unseen."""
    game = services.create_game(creator=alice)
    as_bob = client_for(bob)
    assert as_bob.get(path.format(game.pk)).status_code == 200
    assert as_bob.get(path.format(game.pk)).status_code == 200  # cached
    Block.objects.create(blocker=alice, blocked=bob)
    assert answer(as_bob.get(path.format(game.pk))) == answer(
        as_bob.get(path.format(MISSING))
    )


@pytest.mark.usefixtures("alice_blocks_bob")
def test_every_action_on_the_hidden_game_answers_as_for_a_missing_one(
    as_bob, alice, waiting
):
    """A refused action re-renders the game page: not this one."""
    before = snapshot_tables()
    for action, data in [
        ("join", {}),
        ("move", {"row": 0, "col": 0}),
        ("move", {"row": "x"}),
        ("abort", {}),
        ("forfeit", {}),
        ("rematch", {}),
    ]:
        hidden = as_bob.post(f"/games/{waiting.pk}/{action}/", data)
        missing = as_bob.post(f"/games/{MISSING}/{action}/", data)
        assert answer(hidden) == answer(missing), action
        assert hidden.status_code == 404, action
    assert snapshot_tables() == before


@pytest.mark.usefixtures("alice_blocks_bob")
def test_the_blockers_other_games_stay_visible(as_bob, alice, bob, carol, play):
    """Only a waiting game is hidden: a game running or finished goes on being
    shown, to the blocked person too (they may be playing in it)."""
    running = services.create_game(creator=alice, opponent=carol)
    with_bob = services.create_game(creator=alice, opponent=bob)
    finished = play(services.create_game(creator=alice, opponent=carol), *X_WINS_ROW_0)
    for game in (running, with_bob, finished):
        for path in GAME_PATHS:
            assert as_bob.get(path.format(game.pk)).status_code == 200, path
    # Bob's own waiting game, and a waiting game of someone bob blocked.
    services.block_player(blocker=bob, blocked=carol)
    for game in (
        services.create_game(creator=bob),
        services.create_game(creator=carol),
    ):
        assert as_bob.get(f"/games/{game.pk}/").status_code == 200


def test_join_is_offered_only_to_someone_who_may_join(client_for, alice, bob, carol):
    """The open game's page: Join for carol; not for alice (hers); bob, whom
    alice blocked, gets no page at all; an invitation offers no Join button."""
    game = services.create_game(creator=alice, side="o")
    services.block_player(blocker=alice, blocked=bob)
    join_form = f'action="/games/{game.pk}/join/"'
    for path in ("/games/{}/", "/games/{}/live/"):
        assert join_form in text(client_for(carol).get(path.format(game.pk)))
        assert join_form not in text(client_for(alice).get(path.format(game.pk)))
        assert client_for(bob).get(path.format(game.pk)).status_code == 404
    invitation = services.create_invitation(creator=carol).game
    page = text(client_for(alice).get(f"/games/{invitation.pk}/"))
    assert f'action="/games/{invitation.pk}/join/"' not in page


@pytest.mark.usefixtures("fresh_hub", "alice_blocks_bob")
@pytest.mark.django_db(transaction=True)
def test_the_blocked_persons_stream_is_refused_as_for_a_missing_game(
    client_for, alice, bob, carol
):
    game = services.create_game(creator=alice)
    bob_cookie = sessionid(client_for(bob))
    carol_cookie = sessionid(client_for(carol))

    async def answer_of(game_id: int, cookie: str):
        stream = Stream(f"/games/{game_id}/events/", cookie=cookie)
        status, _headers, body = await stream.response()
        await stream.close()
        return status, body.decode()

    async def scenario():
        return (
            await answer_of(game.pk, bob_cookie),
            await answer_of(MISSING, bob_cookie),
            await answer_of(game.pk, carol_cookie),
        )

    hidden, missing, shown = run(scenario())
    assert hidden == missing == (404, NO_SUCH_GAME)
    assert shown == (200, "")
    assert hub.games == {}


@pytest.mark.parametrize("blocked", [False, True])
def test_the_page_read_and_the_streams_query_agree(alice, bob, carol, play, blocked):
    """Game.objects.for_page (SQL written out) and visible_to (the ORM's, for
    the streams) hide the same games from the same viewers."""
    games = [
        services.create_game(creator=alice, side="x"),
        services.create_game(creator=alice, side="o"),
        services.create_invitation(creator=alice).game,
        services.create_game(creator=carol),
        services.create_game(creator=alice, opponent=carol),
        play(services.create_game(creator=alice, opponent=carol), *X_WINS_ROW_0),
    ]
    services.abort(game_id=services.create_game(creator=alice).pk, user=alice)
    games.append(Game.objects.get(status=GameStatus.ABORTED))
    if blocked:
        services.block_player(blocker=alice, blocked=bob)
        services.block_player(blocker=carol, blocked=alice)
    for viewer in (alice, bob, carol):
        visible = set(Game.objects.visible_to(viewer).values_list("pk", flat=True))
        for game in games:
            try:
                Game.objects.for_page(game.pk, viewer)
                found = True
            except Game.DoesNotExist:
                found = False
            assert found == (game.pk in visible), (viewer, game)
    # The three waiting games of alice's are hidden from bob, carol's from alice.
    everything = {game.pk for game in games}
    expected = {
        alice: everything - ({games[3].pk} if blocked else set()),
        bob: everything - ({game.pk for game in games[:3]} if blocked else set()),
        carol: everything,
    }
    for viewer, shown in expected.items():
        assert set(Game.objects.visible_to(viewer).values_list("pk", flat=True)) == (
            shown
        ), viewer


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
