"""The game admin: inspect games, never edit them."""

import re

import pytest
from django.core.management import call_command

from games import player_stats, services
from games.models import Game, PlayerRecord, Series

from ..conftest import snapshot_tables


@pytest.fixture
def as_admin(client_for, make_user):
    return client_for(make_user("root", is_staff=True, is_superuser=True))


def _games(alice, bob, play, count):
    for _ in range(count):
        play(
            services.create_game(creator=alice, opponent=bob),
            (0, 0), (1, 0), (0, 1), (1, 1), (0, 2),
        )  # fmt: skip


@pytest.mark.parametrize("count", [1, 25])
def test_changelist_queries_do_not_grow(
    as_admin, alice, bob, play, count, django_assert_max_num_queries
):
    _games(alice, bob, play, count)
    with django_assert_max_num_queries(6):
        response = as_admin.get("/admin/games/game/")
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="field-status"') == count
    assert "X won" in page


def test_changelist_filters_and_search(as_admin, alice, bob, carol, play):
    _games(alice, bob, play, 2)
    services.create_game(creator=carol)
    waiting = as_admin.get("/admin/games/game/?status__exact=waiting").content.decode()
    assert waiting.count('class="field-status"') == 1
    found = as_admin.get("/admin/games/game/?q=carol").content.decode()
    assert found.count('class="field-status"') == 1
    assert "By status" in as_admin.get("/admin/games/game/").content.decode()


def test_change_page_draws_the_board_and_lists_moves(
    as_admin, game, play, django_assert_max_num_queries
):
    play(game, (0, 0), (1, 1), (2, 2))
    with django_assert_max_num_queries(12):
        response = as_admin.get(f"/admin/games/game/{game.pk}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert " X | · | · \n---+---+---\n · | O | · \n---+---+---\n · | · | X " in page
    sequence = re.findall(r'class="field-sequence_number">\s*<p>(\d)</p>', page)
    assert sequence == ["1", "2", "3"]
    # Read-only: no editable inputs for the game's state, no save button.
    assert 'name="status"' not in page
    assert 'name="_save"' not in page


def test_admin_cannot_edit_or_add_games(as_admin, game):
    before = snapshot_tables()
    response = as_admin.post(
        f"/admin/games/game/{game.pk}/change/",
        {"status": "x_won", "board": "XXX------", "move_count": 3},
    )
    assert response.status_code == 403
    assert as_admin.get("/admin/games/game/add/").status_code == 403
    assert snapshot_tables() == before


def test_admin_can_delete_a_game(as_admin, game):
    response = as_admin.post(f"/admin/games/game/{game.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Game.objects.filter(pk=game.pk).exists()


# -- records and move export ------------------------------------------------


def test_user_admin_shows_the_record(as_admin, history, alice):
    response = as_admin.get(f"/admin/auth/user/{alice.pk}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert (
        "5 played: 3 won, 1 lost (1 by forfeit), 1 drawn. "
        "Current streak: 2 wins in a row." in page
    )
    assert '<a href="/players/alice/">Player page</a>' in page


def _export(as_admin, action, games):
    return as_admin.post(
        "/admin/games/game/",
        {"action": action, "_selected_action": [game.pk for game in games]},
    )


def test_export_moves_as_json(as_admin, history, alice, bob):
    games = [history["win_as_x"], history["forfeit_as_x"]]
    before = snapshot_tables()
    response = _export(as_admin, "export_moves_json", games)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert 'filename="game-moves.json"' in response["Content-Disposition"]
    exported = response.json()["games"]
    assert [game["id"] for game in exported] == [game.pk for game in games]
    first, second = exported
    assert (first["player_x"], first["player_o"], first["status"]) == (
        "alice",
        "bob",
        "x_won",
    )
    assert [
        (move["sequence_number"], move["player"], move["row"], move["col"])
        for move in first["moves"]
    ] == [
        (1, "X", 0, 0),
        (2, "O", 1, 0),
        (3, "X", 0, 1),
        (4, "O", 1, 1),
        (5, "X", 0, 2),
    ]
    assert (second["status"], second["moves"]) == ("x_forfeits", [])
    assert snapshot_tables() == before


def test_export_moves_as_csv(as_admin, history):
    game = history["win_as_o"]
    response = _export(as_admin, "export_moves_csv", [game])
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert lines[0] == "game,sequence_number,player,username,row,col,played_at"
    rows = [line.split(",")[:6] for line in lines[1:]]
    assert rows == [
        [str(game.pk), "1", "X", "carol", "0", "0"],
        [str(game.pk), "2", "O", "alice", "1", "0"],
        [str(game.pk), "3", "X", "carol", "0", "1"],
        [str(game.pk), "4", "O", "alice", "1", "1"],
        [str(game.pk), "5", "X", "carol", "2", "2"],
        [str(game.pk), "6", "O", "alice", "1", "2"],
    ]


def test_deleting_games_recounts_records_and_series(as_admin, history, alice, bob):
    doomed = [history["win_as_x"], history["forfeit_as_x"]]
    response = as_admin.post(
        "/admin/games/game/",
        {
            "action": "delete_selected",
            "_selected_action": [game.pk for game in doomed],
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert not Game.objects.filter(pk__in=[game.pk for game in doomed]).exists()
    assert PlayerRecord.objects.record_of(alice).total == player_stats.Tally(
        wins=2, draws=1
    )
    assert PlayerRecord.objects.record_of(bob).total == player_stats.Tally(
        forfeits=1, draws=1
    )
    assert Series.objects.head_to_head(alice)[0] == (bob, 1, 0, 1)
    call_command("check_games")  # raises if anything disagrees


def test_deleting_one_game_from_its_page(as_admin, history, alice, carol):
    game = history["win_as_o"]
    response = as_admin.post(f"/admin/games/game/{game.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert PlayerRecord.objects.record_of(carol).total == player_stats.Tally()
    assert Series.objects.head_to_head(alice) == [
        (history["bob_forfeits"].player_x, 2, 1, 1)
    ]
    call_command("check_games")
