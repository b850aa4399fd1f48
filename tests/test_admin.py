"""The game admin: inspect games, never edit them."""

import re

import pytest

from games import services
from games.models import Game

from .conftest import snapshot_tables


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
