"""Hostile input to the game routes where the exact answer is known, with
hypothesis: move fields (row, col, ply), a new game's opponent and side,
invitation links and block names. Besides never a 5xx and nothing stored by a
refusal, each answer's status is the one the contract gives.

Budget and strategies: tests/support/fuzz.py (FUZZ_SCALE=10 runs ten times as
many examples, randomized).
"""

from hypothesis import example, given
from hypothesis import strategies as st

from games.models import Game

from ..support.fuzz import (
    ACTORS,
    EXAMPLES,
    assert_games_consistent,
    budget,
    client_as,
    field_values,
    hostile_text,
    last_value,
    rolled_back,
)
from ..support.hostile import is_login_redirect, send

# -- moves: the exact answer is known ---------------------------------------


def _number(value, largest: int) -> int | None:
    """What the contract accepts: plain ASCII digits (at most 3) up to `largest`."""
    text = str(value).strip()
    if text.isascii() and text.isdigit() and len(text) <= 3 and int(text) <= largest:
        return int(text)
    return None


def _has_nul(data: dict) -> bool:
    values = [
        v
        for value in data.values()
        for v in (value if isinstance(value, list) else [value])
    ]
    return any("\x00" in str(value) for value in values)


@budget(EXAMPLES["moves"])
@given(
    row=st.one_of(st.none(), field_values),
    col=st.one_of(st.none(), field_values),
    ply=st.one_of(st.none(), st.sampled_from(["", "2", "0", "3"]), field_values),
)
def test_hostile_move_fields(world, row, col, ply):
    """alice is to move in the game in progress (ply 2; (0,0) and (1,1) taken)."""
    game_id = world["in progress"]
    data = {
        name: value
        for name, value in (("row", row), ("col", col), ("ply", ply))
        if value is not None and value != []
    }
    with rolled_back():
        response = send(client_as("alice"), "POST", f"/games/{game_id}/move/", data)
        game = Game.objects.get(pk=game_id)
        assert_games_consistent()
    cell = (_number(last_value(row or ""), 2), _number(last_value(col or ""), 2))
    seen = last_value(ply) if ply not in (None, []) else ""
    if _has_nul(data):
        assert response.status_code == 400
        assert "a NUL byte" in response.text
    elif None in cell:
        assert response.status_code == 400
        assert "Choose a cell on the board." in response.text
    elif seen != "" and _number(seen, 9) is None:
        assert response.status_code == 400
        assert "did not say which board you saw" in response.text
    elif (seen != "" and _number(seen, 9) != 2) or cell in ((0, 0), (1, 1)):
        assert response.status_code == 409
    else:
        assert response.status_code == 302
        assert game.move_count == 3
        assert game.board[cell[0] * 3 + cell[1]] == "X"


# -- new games: opponent and side --------------------------------------------


@budget(EXAMPLES["new games"])
@given(
    opponent=st.one_of(st.none(), field_values), side=st.one_of(st.none(), field_values)
)
def test_hostile_new_game_fields(world, opponent, side):
    data = {
        name: value
        for name, value in (("opponent", opponent), ("side", side))
        if value is not None and value != []
    }
    with rolled_back():
        before = Game.objects.count()
        response = send(client_as("bob"), "POST", "/games/new/", data)
        created = Game.objects.count() - before
        assert_games_consistent()
    name = str(last_value(opponent) if opponent not in (None, []) else "").strip()
    chosen = last_value(side) if side not in (None, []) else ""
    valid = name in ("", "alice", "bob", "carol", "staff", "root") and chosen in (
        "",
        "x",
        "o",
        "random",
    )
    if _has_nul(data):
        assert response.status_code == 400
        assert created == 0
    elif valid:
        assert response.status_code == 302
        assert created == 1
    else:
        assert response.status_code == 400
        assert created == 0


# -- invitation links and blocks ------------------------------------------------

path_segment = hostile_text.filter(lambda text: "?" not in text and "#" not in text)


@budget(EXAMPLES["invitations"])
@given(
    actor=st.sampled_from(ACTORS),
    secret=st.one_of(path_segment, st.just(None)),
    join=st.booleans(),
)
@example(actor="bob", secret="A" * 43, join=True)
def test_hostile_invitation_links(world, actor, secret, join):
    """carol's invitation: only its own secret (None here) opens it."""
    real = world["invitation secret"]
    path = f"/invitations/{world['invitation']}/{real if secret is None else secret}/"
    with rolled_back():
        if join:
            response = send(client_as(actor), "POST", path + "join/")
        else:
            response = send(client_as(actor), "GET", path)
        joined = Game.objects.get(pk=world["invitation"]).player_o
        assert_games_consistent()
    if secret is not None and secret != real:
        assert response.status_code in (400, 404) or is_login_redirect(response)
    elif actor == "anonymous" and join:
        assert is_login_redirect(response)
    elif actor == "anonymous":
        assert response.status_code == 200
    elif actor == "carol":
        assert response.status_code == (409 if join else 200)
    else:
        assert response.status_code == (302 if join else 200)
        assert (joined.username if joined else None) == (actor if join else None)


@budget(EXAMPLES["blocks"])
@given(
    actor=st.sampled_from(["alice", "bob", "root"]),
    username=st.one_of(st.sampled_from(["alice", "bob", "carol"]), path_segment),
    action=st.sampled_from(["block", "unblock"]),
)
def test_hostile_block_names(world, actor, username, action):
    from games.models import Block

    with rolled_back():
        response = send(client_as(actor), "POST", f"/players/{username}/{action}/")
        stored = list(
            Block.objects.values_list("blocker__username", "blocked__username")
        )
    players = [name for name in ACTORS if name != "anonymous"]
    if username in players and (action, username) != ("block", actor):
        assert response.status_code == 302
        assert stored == ([(actor, username)] if action == "block" else [])
    else:
        assert response.status_code in (400, 404)
        assert stored == []
