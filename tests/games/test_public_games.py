"""Public by link, private on request (games.services.privacy): a started game
and its replay are readable by anyone with the link, without an account, live
included; a private one answers every non-player exactly as a missing game
does; waiting games stay as they were; the account's choice makes every new
game private."""

import asyncio

import pytest
from django.test import Client

from accounts.models import Preferences
from games import services
from games.live.hub import hub
from games.live.streams import TOO_MANY_VISITOR_STREAMS
from games.models import Game

from ..conftest import snapshot_tables
from ..support.asgi import BOUND, Stream, in_thread, move, run, sessionid
from ..support.bodies import comparable, text
from .test_views_game import buttons

MISSING = 999999

# Every read of a game a non-player may be refused (and its query string).
READS = ["", "?ply=1", "state.json", "live/"]


def url(game_id: int, read: str) -> str:
    return f"/games/{game_id}/{read}"


@pytest.fixture
def started(game, alice):
    """alice (X) v bob (O), alice played the centre."""
    services.play_move(game_id=game.pk, user=alice, row=1, col=1)
    game.refresh_from_db()
    return game


def private(game, user) -> Game:
    return services.set_private(game_id=game.pk, user=user, private=True)


# -- a visitor reads a started public game ---------------------------------


def test_a_visitor_reads_a_started_game_without_buttons_and_is_offered_a_login(
    started, django_assert_num_queries
):
    visitor = Client()
    with django_assert_num_queries(1):  # the game page's one read (sql.py)
        response = visitor.get(f"/games/{started.pk}/")
    assert response.status_code == 200
    page = text(response)
    assert "Waiting for bob (O)." in page
    assert "X: row 2, column 2" in page
    assert buttons(response) == set()
    login = f'href="/accounts/login/?next=/games/{started.pk}/">Log in to play</a>'
    assert login in page
    assert f'href="/accounts/signup/?next=/games/{started.pk}/">Sign up</a>' in page
    assert "Make this game private" not in page  # players only
    assert f'data-events="/games/{started.pk}/events/"' in page


def test_a_visitor_reads_the_replay_the_state_and_the_live_part(started):
    visitor = Client()
    replay = visitor.get(f"/games/{started.pk}/?ply=0")
    assert replay.status_code == 200
    assert "Replay: after move 0 of 1" in text(replay)
    state = visitor.get(f"/games/{started.pk}/state.json")
    assert state.status_code == 200
    assert state.json()["ply"] == 1
    live = visitor.get(f"/games/{started.pk}/live/")
    assert live.status_code == 200
    assert live["Cache-Control"] == "no-store"
    assert "Waiting for bob (O)." in text(live)


def test_a_players_page_offers_the_private_control_a_spectators_does_not(
    started, as_alice, as_carol
):
    page = text(as_alice.get(f"/games/{started.pk}/"))
    assert "Public: anyone with the link can watch this game." in page
    assert 'name="private" value="1"' in page
    assert "Make this game private" in page
    assert "Make this game private" not in text(as_carol.get(f"/games/{started.pk}/"))
    assert "Log in to play" not in page


def test_waiting_games_stay_as_they_were_for_a_visitor(alice):
    open_game = services.create_game(creator=alice)
    response = Client().get(f"/games/{open_game.pk}/")
    assert response.status_code == 200
    assert "Play as guest" in text(response)
    invitation = services.create_invitation(creator=alice).game
    response = Client().get(f"/games/{invitation.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/games/{invitation.pk}/"


# -- private games -----------------------------------------------------------


@pytest.mark.parametrize("read", READS)
def test_a_private_game_is_to_a_visitor_exactly_a_missing_game(started, bob, read):
    private(started, bob)
    asked, missing = url(started.pk, read), url(MISSING, read)
    hidden, absent = Client().get(asked), Client().get(missing)
    assert hidden.status_code == absent.status_code == 404
    assert comparable(hidden.content, asked) == comparable(absent.content, missing)
    assert hidden["Content-Type"] == absent["Content-Type"]


@pytest.mark.parametrize("read", READS)
def test_a_private_game_is_to_another_player_exactly_a_missing_game(
    started, bob, as_carol, read
):
    private(started, bob)
    asked, missing = url(started.pk, read), url(MISSING, read)
    hidden, absent = as_carol.get(asked), as_carol.get(missing)
    assert hidden.status_code == absent.status_code == 404
    assert comparable(hidden.content, asked) == comparable(absent.content, missing)


@pytest.mark.parametrize("read", READS)
def test_its_players_still_read_a_private_game(started, bob, as_alice, as_bob, read):
    private(started, bob)
    for player in (as_alice, as_bob):
        assert player.get(url(started.pk, read)).status_code == 200


def test_a_private_page_says_so_to_its_players(started, alice, as_bob):
    private(started, alice)
    page = text(as_bob.get(f"/games/{started.pk}/"))
    assert "Private: only the two players can see this game." in page
    assert 'name="private" value="0"' in page
    assert "Make this game public" in page


def test_a_player_makes_the_game_private_then_public_again(started, as_bob):
    response = as_bob.post(f"/games/{started.pk}/private/", {"private": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"/games/{started.pk}/"
    after = Game.objects.get(pk=started.pk)
    assert after.is_private
    assert after.version == started.version + 1
    page = text(as_bob.get(f"/games/{started.pk}/"))
    assert "This game is now private: only its players can see it." in page
    assert Client().get(f"/games/{started.pk}/").status_code == 404
    response = as_bob.post(f"/games/{started.pk}/private/", {"private": "0"})
    assert response.status_code == 302
    assert not Game.objects.get(pk=started.pk).is_private
    page = text(as_bob.get(f"/games/{started.pk}/"))
    assert "This game is now public: anyone with its link can watch." in page
    assert Client().get(f"/games/{started.pk}/").status_code == 200


def test_the_same_choice_again_changes_nothing(started, bob, as_bob):
    private(started, bob)
    version = Game.objects.get(pk=started.pk).version
    assert as_bob.post(f"/games/{started.pk}/private/", {"private": "1"}).status_code
    assert Game.objects.get(pk=started.pk).version == version


@pytest.mark.parametrize("value", ["", "yes", "2", "10"])
def test_a_bad_choice_is_a_400_that_changes_nothing(started, as_bob, value):
    before = snapshot_tables()
    response = as_bob.post(f"/games/{started.pk}/private/", {"private": value})
    assert response.status_code == 400
    assert "Choose whether the game is private (1) or public (0)." in text(response)
    assert snapshot_tables() == before


def test_a_non_player_may_not_choose(started, as_carol, bob):
    before = snapshot_tables()
    response = as_carol.post(f"/games/{started.pk}/private/", {"private": "1"})
    assert response.status_code == 403
    assert "You are not a player in this game." in text(response)
    assert snapshot_tables() == before
    # Of a private game, they learn nothing: the missing game's 404.
    private(started, bob)
    before = snapshot_tables()
    hidden = as_carol.post(f"/games/{started.pk}/private/", {"private": "0"})
    absent = as_carol.post(f"/games/{MISSING}/private/", {"private": "0"})
    assert hidden.status_code == absent.status_code == 404
    assert comparable(hidden.content, "") == comparable(absent.content, "")
    assert snapshot_tables() == before


def test_a_private_open_game_is_still_open_to_join(alice, carol, client_for):
    Preferences.objects.create(user=alice, new_games_private=True)
    open_game = services.create_game(creator=alice)
    assert open_game.is_private
    as_carol = client_for(carol)
    assert "Join this game" in text(as_carol.get(f"/games/{open_game.pk}/"))
    assert as_carol.post(f"/games/{open_game.pk}/join/").status_code == 302
    # Now started: private, carol is a player, a visitor finds nothing.
    assert as_carol.get(f"/games/{open_game.pk}/").status_code == 200
    assert Client().get(f"/games/{open_game.pk}/").status_code == 404


# -- the account's choice --------------------------------------------------


def test_the_account_choice_makes_every_new_game_private(alice, bob, as_alice):
    assert not services.create_game(creator=alice, opponent=bob).is_private
    response = as_alice.post("/accounts/private-games/", {"private": "on"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/preferences/"
    assert Preferences.objects.get(user=alice).new_games_private
    page = text(as_alice.get("/accounts/preferences/"))
    assert "Every game you start from now on is private." in page
    assert 'id="id_private" checked>' in page
    assert services.create_game(creator=alice, opponent=bob).is_private
    assert services.create_invitation(creator=alice).game.is_private
    # bob did not ask: his games stay public.
    assert not services.create_game(creator=bob, opponent=alice).is_private
    response = as_alice.post("/accounts/private-games/", {})
    assert response.status_code == 302
    assert "Every game you start from now on is public by its link." in text(
        as_alice.get("/accounts/preferences/")
    )
    assert not services.create_game(creator=alice, opponent=bob).is_private


def test_a_rematch_of_a_private_game_is_private(started, bob):
    private(started, bob)
    finished = services.forfeit(game_id=started.pk, user=bob)  # bob was to move
    assert finished.is_finished
    assert services.rematch(game_id=finished.pk, user=bob).is_private


def test_the_account_choice_wants_a_login_and_a_post(as_alice):
    response = Client().post("/accounts/private-games/", {"private": "on"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert as_alice.get("/accounts/private-games/").status_code == 405


# -- a visitor's live stream -----------------------------------------------


async def _opened(path: str, **kwargs) -> Stream:
    stream = Stream(path, **kwargs)
    status, _, _ = await stream.response()
    assert status == 200
    await asyncio.wait_for(hub.listening.wait(), BOUND)
    return stream


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_hub")
def test_a_visitor_follows_a_public_game_live(started, bob):
    path = f"/games/{started.pk}/events/?v={started.version}"

    async def scenario():
        stream = await _opened(path)
        await in_thread(move, started, bob, 0, 0)
        change = await stream.change()
        await stream.close()
        return change

    change = run(scenario())
    assert change["data"] == str(started.version + 1)
    assert hub.visitors == {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_hub")
def test_a_private_games_stream_is_a_missing_games(started, bob, carol, client_for):
    private(started, bob)
    carol_cookie = sessionid(client_for(carol))

    async def scenario():
        answers = []
        for cookie in ("", carol_cookie):
            for game_id in (started.pk, MISSING):
                answers.append(
                    await Stream(f"/games/{game_id}/events/", cookie=cookie).response()
                )
        return answers

    def same(answer):  # but the request's own id
        status, headers, body = answer
        return status, headers | {"x-request-id": "ID"}, body

    visitor_hidden, visitor_absent, carol_hidden, carol_absent = run(scenario())
    assert same(visitor_hidden) == same(visitor_absent)
    assert (visitor_hidden[0], visitor_hidden[2]) == (403, b"Log in to watch games.")
    assert same(carol_hidden) == same(carol_absent)
    assert (carol_hidden[0], carol_hidden[2]) == (404, b"There is no such game.")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_hub")
def test_visitor_streams_are_limited_per_network(started, settings):
    settings.WEB_MAX_STREAMS_PER_ADDRESS = 2
    settings.TRUSTED_PROXY_COUNT = 1
    path = f"/games/{started.pk}/events/?v={started.version}"
    first = [("x-forwarded-for", "203.0.113.7")]
    # One IPv6 network (/64) counts as one address.
    six_a = [("x-forwarded-for", "2001:db8::1")]
    six_b = [("x-forwarded-for", "2001:db8::ffff:2")]

    async def scenario():
        held = [await _opened(path, headers=first) for _ in range(2)]
        refused = await Stream(path, headers=first).response()
        other = await _opened(path, headers=[("x-forwarded-for", "198.51.100.9")])
        six = [await _opened(path, headers=six_a), await _opened(path, headers=six_b)]
        six_refused = await Stream(path, headers=six_a).response()
        await held.pop().close()
        again = await _opened(path, headers=first)  # one closed: one may open
        for stream in [*held, other, *six, again]:
            await stream.close()
        return refused, six_refused

    refused, six_refused = run(scenario())
    for status, headers, body in (refused, six_refused):
        assert (status, body.decode()) == (429, TOO_MANY_VISITOR_STREAMS)
        assert headers["content-type"] == "text/plain; charset=utf-8"
    assert hub.visitors == {}
