"""Replay: /games/<id>/?ply=N shows the board after N moves, read-only."""

import re

import pytest

from games import rules, services
from games.models import Move
from games.presentation import ReplayNav

from ..conftest import snapshot_tables

# X wins on the diagonal at move 7, after both sides have played.
WIN_IN_7 = [(0, 0), (0, 1), (1, 1), (0, 2), (1, 0), (2, 0), (2, 2)]
CELL_LABEL = re.compile(r'<span class="visually-hidden">(\w+): row (\d), column (\d)')
BAD_PLY = "A replay link names a move by its number, from 0 to the number played."


@pytest.fixture
def finished(game, play):
    return play(game, *WIN_IN_7)


def text(response) -> str:
    return response.content.decode()


def shown_board(response) -> str:
    """The board on a read-only page, as the 9-character board string."""
    marks = {"X": "X", "O": "O", "Empty": rules.EMPTY}
    cells = {
        (int(row) - 1, int(col) - 1): marks[mark]
        for mark, row, col in CELL_LABEL.findall(text(response))
    }
    assert len(cells) == rules.CELLS
    return "".join(cells[divmod(index, 3)] for index in range(rules.CELLS))


def board_from_moves(game, ply: int) -> str:
    """The board that the stored Move rows give after `ply` moves."""
    cells = [rules.EMPTY] * rules.CELLS
    for move in Move.objects.filter(game=game, sequence_number__lte=ply):
        cells[rules.cell_index(move.row, move.col)] = move.player
    return "".join(cells)


def test_every_ply_shows_the_board_of_the_stored_moves(finished, client_for, alice):
    client = client_for(alice)
    for ply in range(finished.move_count + 1):
        response = client.get(f"{finished.get_absolute_url()}?ply={ply}")
        assert response.status_code == 200
        assert shown_board(response) == board_from_moves(finished, ply)
        assert f"Replay: after move {ply} of 7" in text(response)
        assert f"Board after {ply} move" in text(response)
        assert 'name="row"' not in text(response)  # no move buttons in a replay


def test_the_current_move_is_marked_and_the_links_step(finished, client_for, bob):
    client = client_for(bob)
    url = finished.get_absolute_url()
    page = text(client.get(f"{url}?ply=3"))
    assert re.findall(r'aria-current="step"[^>]*><a href="[^"]+">([^<]+)<', page) == [
        "3. X: row 2, column 2"
    ]
    assert f'href="{url}?ply=0" data-key="Home">« First' in page
    assert f'href="{url}?ply=2" rel="prev" data-key="ArrowLeft">' in page
    assert f'href="{url}?ply=4" rel="next" data-key="ArrowRight">' in page
    assert f'href="{url}?ply=7" data-key="End">Last' in page

    start = text(client.get(f"{url}?ply=0"))
    assert 'aria-current="step"' not in start
    assert 'rel="prev"' not in start
    assert 'aria-disabled="true">« First' in start
    end = text(client.get(f"{url}?ply=7"))
    assert 'rel="next"' not in end
    assert 'aria-disabled="true">Last »' in end
    assert "cell-win" in end  # the winning line shows at the winning move
    assert "cell-win" not in page


def test_replay_loads_the_keyboard_script_with_the_csp_nonce(finished, client_for):
    response = client_for(finished.player_x).get(f"{finished.get_absolute_url()}?ply=2")
    nonce = re.search(r"'nonce-([^']+)'", response["Content-Security-Policy"])[1]
    page = text(response)
    assert (
        f'<script src="/static/games/replay.js" nonce="{nonce}" defer></script>' in page
    )
    # The key guard it calls, from 'self', runs first (deferred scripts in order).
    guard = '<script src="/static/games/key_guard.js" defer></script>'
    assert page.index(guard) < page.index("/static/games/replay.js")
    assert " on" + "keydown=" not in page


def test_the_game_page_loads_the_key_guard_before_the_keys(game, client_for):
    page = text(client_for(game.player_x).get(game.get_absolute_url()))
    guard = '<script src="/static/games/key_guard.js" defer></script>'
    assert page.count(guard) == 1
    assert page.index(guard) < page.index("/static/games/keys.js")
    assert "replay.js" not in page


@pytest.mark.parametrize(
    ("ply", "plies"),
    [(0, [None, None, 1, 7]), (3, [0, 2, 4, 7]), (7, [0, 6, None, None])],
)
def test_the_replay_links_are_first_previous_next_last(ply, plies):
    """None: shown disabled, the step would go nowhere."""
    links = ReplayNav(ply, 7).links(
        first_label="F", previous_label="P", next_label="N", last_label="L"
    )
    assert [link.label for link in links] == ["F", "P", "N", "L"]
    assert [link.ply for link in links] == plies
    assert [link.key for link in links] == ["Home", "ArrowLeft", "ArrowRight", "End"]
    assert [link.rel for link in links] == ["", "prev", "next", ""]


def test_a_game_without_moves_replays_with_every_step_disabled():
    links = ReplayNav(0, 0).links(
        first_label="F", previous_label="P", next_label="N", last_label="L"
    )
    assert [link.ply for link in links] == [None, None, None, None]


def test_a_finished_game_offers_replay(finished, game, client_for, alice):
    page = text(client_for(alice).get(finished.get_absolute_url()))
    assert f'href="{finished.get_absolute_url()}?ply=0">Replay this game' in page
    assert "replay.js" not in page


def test_a_running_game_can_be_replayed_without_move_buttons(game, play, client_for):
    play(game, (0, 0), (1, 1))
    client = client_for(game.player_x)  # X is to move
    live = client.get(game.get_absolute_url())
    assert 'name="row"' in text(live)
    assert "Replay this game" not in text(live)
    replay = client.get(f"{game.get_absolute_url()}?ply=2")
    assert replay.status_code == 200
    assert 'name="row"' not in text(replay)
    assert "Forfeit" not in text(replay)


@pytest.mark.parametrize(
    ("ply", "message"),
    [
        ("-1", BAD_PLY),
        ("abc", BAD_PLY),
        ("1.5", BAD_PLY),
        ("", BAD_PLY),
        ("١", BAD_PLY),  # an Arabic-Indic digit one
        ("10", BAD_PLY),
        ("99999999999999999999", BAD_PLY),
        ("8", "There is no move 8 to show: this game has 7 moves."),
    ],
)
def test_a_bad_ply_is_a_400_with_a_message(finished, client_for, alice, ply, message):
    before = snapshot_tables()
    response = client_for(alice).get(finished.get_absolute_url(), {"ply": ply})
    assert response.status_code == 400
    assert message in text(response)
    assert 'role="alert"' in text(response)
    assert snapshot_tables() == before


def test_replay_beyond_an_empty_game(game, client_for, alice):
    response = client_for(alice).get(f"{game.get_absolute_url()}?ply=1")
    assert response.status_code == 400
    assert "There is no move 1 to show: this game has 0 moves." in text(response)


def test_replay_query_count_is_the_same_at_every_ply(
    finished, client_for, alice, django_assert_num_queries
):
    client = client_for(alice)
    for ply in (0, 4, 7):
        # user, game with players+series, the finished game's rematch
        with django_assert_num_queries(3):
            response = client.get(f"{finished.get_absolute_url()}?ply={ply}")
        assert response.status_code == 200
        assert f"Replay: after move {ply} of " in response.content.decode()


DRAW = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]
O_WINS = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2), (1, 2)]


@pytest.mark.parametrize("cells", [DRAW, O_WINS, O_WINS[:3]])
def test_every_ply_of_other_games(game, play, client_for, cells):
    """A draw, an O win and a game O forfeited after three moves."""
    game = play(game, *cells)
    if not game.is_finished:
        game = services.forfeit(game_id=game.pk, user=game.player_o)
    client = client_for(game.player_x)
    for ply in range(len(cells) + 1):
        response = client.get(f"{game.get_absolute_url()}?ply={ply}")
        assert response.status_code == 200
        assert shown_board(response) == board_from_moves(game, ply)


def test_the_replay_links_speak_the_reader_s_language(finished, client_for):
    """The step links' words, marked `_("…")` in the template, come from the
    templates' catalog at request time."""
    url = finished.get_absolute_url()
    page = text(
        client_for(finished.player_x).get(f"{url}?ply=3", HTTP_ACCEPT_LANGUAGE="fr")
    )
    assert f'href="{url}?ply=2" rel="prev" data-key="ArrowLeft">‹ Précédent</a>' in page
