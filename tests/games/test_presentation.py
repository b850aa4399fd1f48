"""What the game page and the lobby say for screen readers and notifications:
the cells' names, the live region's announcement and the turn notices that
static/games/notify.js shows (games.presentation), as rendered for each viewer."""

import html
import re

import pytest

from games import presentation, services
from games.models import Game
from games.presentation import TurnNotice

LIVE_STATE = re.compile(r'<div class="live-state"[^>]*>')
NOTICE_ITEM = re.compile(r"<li[^>]* data-notice=[^>]*>")
# X wins on the top row at move 5; O's moves at (1, 0) and (1, 1).
X_WINS = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
DRAW = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]


def attributes(tag: str) -> dict[str, str]:
    return {
        name: html.unescape(value)
        for name, value in re.findall(r' (data-[\w-]+)="([^"]*)"', tag)
    }


def live_state(client, game) -> dict[str, str]:
    """The data- attributes of the live part's state, as the page's scripts read
    them."""
    response = client.get(f"/games/{game.pk}/live/")
    assert response.status_code == 200
    (tag,) = LIVE_STATE.findall(response.content.decode())
    return attributes(tag)


def notice_attributes(notice: TurnNotice) -> dict[str, str]:
    return {
        "data-notice": notice.key,
        "data-notice-tag": notice.tag,
        "data-notice-title": notice.title,
        "data-notice-body": notice.body,
        "data-notice-url": notice.url,
    }


# -- cells ------------------------------------------------------------------


def test_every_cell_has_a_name(client_for, game, alice, bob, carol, play):
    play(game, (1, 1))
    as_bob = client_for(bob).get(f"/games/{game.pk}/").content.decode()
    labels = re.findall(r'class="cell-button" aria-label="([^"]+)"', as_bob)
    assert labels == [
        "Place O in row 1, column 1",
        "Place O in row 1, column 2",
        "Place O in row 1, column 3",
        "Place O in row 2, column 1",
        "Place O in row 2, column 3",
        "Place O in row 3, column 1",
        "Place O in row 3, column 2",
        "Place O in row 3, column 3",
    ]
    assert '<span class="visually-hidden">X: row 2, column 2</span>' in as_bob
    as_carol = client_for(carol).get(f"/games/{game.pk}/").content.decode()
    assert "cell-button" not in as_carol
    assert '<span class="visually-hidden">Empty: row 1, column 3</span>' in as_carol


def test_the_winning_line_is_named(client_for, game, alice, play):
    play(game, *X_WINS)
    page = client_for(alice).get(f"/games/{game.pk}/").content.decode()
    names = re.findall(r'<span class="visually-hidden">(\w+: row [^<]+)</span>', page)
    assert names == [
        "X: row 1, column 1, winning line",
        "X: row 1, column 2, winning line",
        "X: row 1, column 3, winning line",
        "O: row 2, column 1",
        "O: row 2, column 2",
        "Empty: row 2, column 3",
        "Empty: row 3, column 1",
        "Empty: row 3, column 2",
        "Empty: row 3, column 3",
    ]


def test_one_way_to_name_a_cell_everywhere(client_for, game, alice, bob, carol, play):
    """Issue 37, point 6: the move list, the replay's move list, a taken cell's
    accessible name, the empty cells' buttons and the announcement all name X's
    move at (0, 2) "row 1, column 3"; state.json keeps (0, 2)."""
    play(game, (0, 2))
    named = "X: row 1, column 3"
    as_carol = client_for(carol)
    page = as_carol.get(f"/games/{game.pk}/").content.decode()
    assert f"<li>1. {named}</li>" in page
    assert f'<span class="visually-hidden">{named}</span>' in page
    replay = as_carol.get(f"/games/{game.pk}/?ply=1").content.decode()
    assert re.findall(r'aria-current="step"[^>]*><a href="[^"]+">([^<]+)<', replay) == [
        f"1. {named}"
    ]
    assert f'<span class="visually-hidden">{named}</span>' in replay
    assert live_state(as_carol, game)["data-announce"] == (
        "alice played X in row 1, column 3. Waiting for bob (O)."
    )
    as_bob = client_for(bob).get(f"/games/{game.pk}/").content.decode()
    assert 'aria-label="Place O in row 1, column 2"' in as_bob
    assert f'<span class="visually-hidden">{named}</span>' in as_bob
    state = as_carol.get(f"/games/{game.pk}/state.json").json()
    assert state["moves"] == [{"sequence_number": 1, "player": "X", "row": 0, "col": 2}]
    assert state["board"][0] == [None, None, "X"]


# -- the live region --------------------------------------------------------


def test_the_announcement_names_the_move_and_what_follows(
    client_for, game, alice, bob, carol, play
):
    play(game, (0, 0), (1, 2))
    assert live_state(client_for(alice), game)["data-announce"] == (
        "bob played O in row 2, column 3. Your turn."
    )
    assert live_state(client_for(bob), game)["data-announce"] == (
        "You played O in row 2, column 3. Waiting for alice (X)."
    )
    assert live_state(client_for(carol), game)["data-announce"] == (
        "bob played O in row 2, column 3. Waiting for alice (X)."
    )


def test_the_announcement_of_the_winning_move(client_for, alice, bob, play):
    game = services.create_game(creator=bob, opponent=alice, side="o")
    play(game, (2, 2), (0, 0), (2, 1), (0, 1), (1, 1), (0, 2))  # O: top row
    assert live_state(client_for(alice), game)["data-announce"] == (
        "bob played O in row 1, column 3. bob won."
    )
    assert live_state(client_for(bob), game)["data-announce"] == (
        "You played O in row 1, column 3. You won."
    )


def test_the_announcement_of_a_draw_a_forfeit_and_an_abort(
    game, alice, bob, play, make_user
):
    assert presentation.announcement(play(game, *DRAW), bob) == (
        "alice played X in row 3, column 3. Draw."
    )
    forfeited = services.create_game(creator=alice, opponent=bob)
    forfeited = play(forfeited, (0, 0))
    services.forfeit(game_id=forfeited.pk, user=bob)
    forfeited.refresh_from_db()
    assert presentation.announcement(forfeited, alice) == (
        "You win: bob (O) forfeited."
    )
    aborted = services.create_game(creator=alice, opponent=bob)
    services.abort(game_id=aborted.pk, user=alice)
    aborted.refresh_from_db()
    assert presentation.announcement(aborted, bob) == "Aborted by alice."


def test_the_announcement_before_any_move_and_in_self_play(alice, bob, play):
    joined = services.create_game(creator=alice)
    assert presentation.announcement(joined, alice) == (
        "Waiting for an opponent to join. Share this page's address."
    )
    joined = services.join_game(game_id=joined.pk, user=bob)
    assert presentation.announcement(joined, alice) == "Your turn."
    alone = play(services.create_game(creator=alice, opponent=alice), (0, 0))
    assert presentation.announcement(alone, alice) == (
        "You played X in row 1, column 1. Your turn (O)."
    )
    alone = play(alone, (1, 0), (0, 1), (1, 1), (0, 2))
    assert presentation.announcement(alone, alice) == (
        "You played X in row 1, column 3. X won."
    )


# -- turn notices -----------------------------------------------------------


def test_a_game_started_against_you_is_a_notice_until_you_move(alice, carol, play):
    game = services.create_game(creator=carol, opponent=alice, side="x")
    title = f"Game {game.pk} against carol"
    assert presentation.turn_notice(game, alice) == TurnNotice(
        f"game-{game.pk}-0",
        f"game-{game.pk}",
        title,
        "carol started a game against you.",
        f"/games/{game.pk}/",
    )
    assert presentation.turn_notice(game, carol) is None  # carol started it
    game = play(game, (1, 1))
    assert presentation.turn_notice(game, alice) == TurnNotice(
        f"game-{game.pk}-1",
        f"game-{game.pk}",
        title,
        "carol started a game against you. Your turn.",
        f"/games/{game.pk}/",
    )
    assert presentation.turn_notice(game, carol) is None
    game = play(game, (0, 0))  # alice's own move
    assert presentation.turn_notice(game, alice) is None
    assert presentation.turn_notice(game, carol) == TurnNotice(
        f"game-{game.pk}-2",
        f"game-{game.pk}",
        f"Game {game.pk} against alice",
        "alice has moved. Your turn.",
        f"/games/{game.pk}/",
    )


def test_a_game_you_start_as_x_is_no_notice_to_you(game, alice, bob):
    assert presentation.turn_notice(game, alice) is None
    assert presentation.turn_notice(game, bob) == TurnNotice(
        f"game-{game.pk}-0",
        f"game-{game.pk}",
        f"Game {game.pk} against alice",
        "alice started a game against you.",
        f"/games/{game.pk}/",
    )


def test_the_move_that_ends_a_game_is_a_notice_to_the_other_player(
    game, alice, bob, play
):
    won = play(game, *X_WINS)
    assert presentation.turn_notice(won, bob) == TurnNotice(
        f"game-{won.pk}-5",
        f"game-{won.pk}",
        f"Game {won.pk} against alice",
        "alice won.",
        f"/games/{won.pk}/",
    )
    assert presentation.turn_notice(won, alice) is None
    drawn = play(services.create_game(creator=alice, opponent=bob), *DRAW)
    assert presentation.turn_notice(drawn, bob).body == "Draw."
    assert presentation.turn_notice(drawn, alice) is None  # X made the last move


def test_no_notice_for_forfeits_aborts_spectators_open_games_or_self_play(
    game, alice, bob, carol, play
):
    game = play(game, (0, 0))
    assert presentation.turn_notice(game, carol) is None
    services.forfeit(game_id=game.pk, user=bob)
    game.refresh_from_db()
    assert presentation.turn_notice(game, alice) is None
    aborted = services.create_game(creator=bob, opponent=alice)
    services.abort(game_id=aborted.pk, user=bob)
    aborted.refresh_from_db()
    assert presentation.turn_notice(aborted, alice) is None
    waiting = services.create_game(creator=bob)
    assert presentation.turn_notice(waiting, bob) is None
    alone = play(services.create_game(creator=alice, opponent=alice), (0, 0))
    assert presentation.turn_notice(alone, alice) is None


def test_lobby_rows_give_the_same_notices_without_a_query(
    alice, bob, carol, play, django_assert_num_queries
):
    started = services.create_game(creator=carol, opponent=alice, side="o")
    moved = play(services.create_game(creator=alice, opponent=bob), (0, 0), (1, 1))
    rows = list(Game.objects.for_lobby(alice))
    with django_assert_num_queries(0):
        notices = {row.pk: presentation.turn_notice(row, alice) for row in rows}
    assert notices == {
        started.pk: presentation.turn_notice(Game.objects.get(pk=started.pk), alice),
        moved.pk: presentation.turn_notice(Game.objects.get(pk=moved.pk), alice),
    }
    assert notices[moved.pk].body == "bob has moved. Your turn."


# -- what the pages render for the scripts ------------------------------------


def test_the_live_part_carries_the_notice_for_its_viewer_only(
    client_for, game, alice, bob, carol, play
):
    play(game, (0, 0))
    # bob's part first: the page cache keeps one per side, never shared.
    bob_state = live_state(client_for(bob), game)
    alice_state = live_state(client_for(alice), game)
    carol_state = live_state(client_for(carol), game)
    notice = presentation.turn_notice(Game.objects.get(pk=game.pk), bob)
    assert notice.body == "alice started a game against you. Your turn."
    assert notice.url == f"/games/{game.pk}/"
    assert bob_state.items() >= notice_attributes(notice).items()
    for state in (alice_state, carol_state):
        assert "data-notice" not in state
        assert "data-notice-title" not in state


def test_the_lobby_lists_carry_the_notices(client_for, alice, bob, carol, play):
    new = services.create_game(creator=carol, opponent=alice, side="x")
    mine = play(services.create_game(creator=alice, opponent=bob), (0, 0))
    won = play(services.create_game(creator=bob, opponent=alice), *X_WINS)
    lists = client_for(alice).get("/lobby/live/").content.decode()
    found = [attributes(tag) for tag in NOTICE_ITEM.findall(lists)]
    assert found == [
        notice_attributes(
            TurnNotice(
                f"game-{new.pk}-0",
                f"game-{new.pk}",
                f"Game {new.pk} against carol",
                "carol started a game against you.",
                f"/games/{new.pk}/",
            ),
        ),
        notice_attributes(
            TurnNotice(
                f"game-{won.pk}-5",
                f"game-{won.pk}",
                f"Game {won.pk} against bob",
                "bob won.",
                f"/games/{won.pk}/",
            ),
        ),
    ]
    assert f"game-{mine.pk}-" not in lists  # alice's own move: bob's turn


@pytest.mark.parametrize("path", ["/", "/games/{pk}/"])
def test_the_notify_control_is_hidden_until_its_script_shows_it(
    client_for, game, alice, path
):
    page = client_for(alice).get(path.format(pk=game.pk)).content.decode()
    assert '<p class="notify-control" data-notify-control hidden ' in page
    assert "Notify me when it is my turn</button>" in page


def test_the_keys_hint_only_on_your_turn(client_for, game, alice, bob, carol):
    hint = (
        '<p class="hint keys-hint" data-keys-hint hidden>Tip: keys 1 to 9 play a '
        "cell, as on a phone keypad: 1 is top left, 9 bottom right.</p>"
    )
    assert hint in client_for(alice).get(f"/games/{game.pk}/").content.decode()
    for viewer in (bob, carol):
        assert "data-keys-hint" not in (
            client_for(viewer).get(f"/games/{game.pk}/").content.decode()
        )


def test_no_notify_control_for_spectators_replays_or_finished_games(
    client_for, game, alice, carol, play
):
    assert "data-notify-control" not in (
        client_for(carol).get(f"/games/{game.pk}/").content.decode()
    )
    play(game, *X_WINS)
    as_alice = client_for(alice)
    for path in (f"/games/{game.pk}/", f"/games/{game.pk}/?ply=2"):
        assert "data-notify-control" not in as_alice.get(path).content.decode()


def test_the_notice_writes_its_attributes_escaped_or_nothing():
    """TurnNotice.attributes: what the lobby's rows and the game page's live
    state carry for notify.js, as the templates write it."""
    from django.template import Context, Template

    template = Template("<li{% if notice %}{{ notice.attributes }}{% endif %}>")
    notice = TurnNotice(
        key="game-7-3",
        tag="game-7",
        title='Game 7 against "bo" <b>',
        body="A & B.",
        url="/games/7/",
    )
    assert template.render(Context({"notice": notice})) == (
        '<li data-notice="game-7-3" data-notice-tag="game-7" '
        'data-notice-title="Game 7 against &quot;bo&quot; &lt;b&gt;" '
        'data-notice-body="A &amp; B." data-notice-url="/games/7/">'
    )
    assert template.render(Context({"notice": None})) == "<li>"
    assert template.render(Context({})) == "<li>"  # no notice
