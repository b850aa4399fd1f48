"""Model-based test: two players, an intruder and a spectator send random actions
through HTTP (new games, joins, moves anywhere including off the board, stale
plies, forfeits, aborts, rematches), and after every step the app must agree with a
reference model built on games.rules alone: the answer's status code, and for
every game its status, board, whose turn, winner and winning line (state.json
for the game just acted on, the same snapshot for all others), and the stored
moves must replay to the stored board (manage.py check_games).

Budget: EXAMPLES runs of up to STEPS steps each, derandomized, no deadline;
scaled by FUZZ_SCALE as the fuzz tests are (tests/support/fuzz.py: make quick
runs a quarter).
"""

import re
from dataclasses import dataclass
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from games import presentation, rules
from games.models import Game

from ..support.fuzz import SCALE
from ..support.hostile import send

EXAMPLES = max(1, round(12 * SCALE))
STEPS = 30

ACTORS = ("p1", "p2", "intruder", "spectator")
actors = st.sampled_from(ACTORS)
# Mostly on the board, sometimes just off it.
coordinates = st.integers(min_value=-1, max_value=3)
GAME_PATH = re.compile(r"^/games/(\d+)/$")


@dataclass
class ModelGame:
    """What the reference model knows of one game."""

    x: str | None
    o: str | None
    state: rules.GameState
    waiting: bool
    creator: str
    rematch: int | None = None

    def marks_of(self, actor: str) -> list[rules.Mark]:
        return [
            mark
            for mark, player in ((rules.Mark.X, self.x), (rules.Mark.O, self.o))
            if player == actor
        ]

    @property
    def status(self) -> str:
        return "waiting" if self.waiting else self.state.status.value

    def unanswered_by(self, creator: str) -> str | None:
        """The opponent, if `creator` started this running game against someone
        else who has not placed a mark yet; otherwise None."""
        if self.waiting or self.state.status.is_over or self.creator != creator:
            return None
        if self.x == self.o:
            return None
        opponent, mark = (self.o, "O") if self.x == creator else (self.x, "X")
        return None if mark in self.state.board.cells else opponent


# The default limits (tictactoe_site.settings).
MAX_OPEN = 5
MAX_UNANSWERED = 10
MAX_UNANSWERED_PER_OPPONENT = 3


class PlayMachine(RuleBasedStateMachine):
    games = Bundle("games")

    def __init__(self):
        super().__init__()
        # Every run starts from an empty database: its writes are rolled back.
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.clients = {}
        for name in ACTORS:
            user = get_user_model().objects.create_user(username=name)
            self.clients[name] = Client()
            self.clients[name].force_login(user)
        self.model: dict[int, ModelGame] = {}
        self.touched: set[int] = set()

    def teardown(self):
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    def _post(self, actor: str, path: str, data=None):
        return send(self.clients[actor], "POST", path, data or {})

    def _new_game_id(self, response) -> int:
        assert response.status_code == 302
        return int(GAME_PATH.match(response["Location"])[1])

    # -- actions --------------------------------------------------------------

    @rule(
        target=games,
        creator=actors,
        opponent=st.one_of(st.none(), actors),
        side=st.sampled_from(["x", "o"]),
    )
    def new_game(self, creator, opponent, side):
        response = self._post(
            creator, "/games/new/", {"opponent": opponent or "", "side": side}
        )
        open_games = sum(
            1
            for game in self.model.values()
            if game.waiting and creator in (game.x, game.o)
        )
        if opponent is None and open_games >= MAX_OPEN:
            assert response.status_code == 429
            return multiple()
        if self._over_the_challenge_limits(creator, opponent):
            assert response.status_code == 429
            return multiple()
        game_id = self._new_game_id(response)
        first, second = (creator, opponent) if side == "x" else (opponent, creator)
        self.model[game_id] = ModelGame(
            first, second, rules.GameState(), waiting=opponent is None, creator=creator
        )
        self.touched = {game_id}
        return game_id

    def _over_the_challenge_limits(self, creator, opponent) -> bool:
        if opponent is None or opponent == creator:
            return False
        unanswered = [game.unanswered_by(creator) for game in self.model.values()]
        unanswered = [name for name in unanswered if name is not None]
        return (
            len(unanswered) >= MAX_UNANSWERED
            or unanswered.count(opponent) >= MAX_UNANSWERED_PER_OPPONENT
        )

    @rule(actor=actors, game_id=games)
    def join(self, actor, game_id):
        game = self.model[game_id]
        response = self._post(actor, f"/games/{game_id}/join/")
        self.touched = {game_id}
        if actor in (game.x, game.o) or not game.waiting:
            assert response.status_code == 409
            return
        assert response.status_code == 302
        if game.x is None:
            game.x = actor
        else:
            game.o = actor
        game.waiting = False

    @rule(
        actor=actors,
        game_id=games,
        row=coordinates,
        col=coordinates,
        ply=st.one_of(st.none(), st.integers(min_value=-1, max_value=10)),
    )
    def move(self, actor, game_id, row, col, ply):
        game = self.model[game_id]
        data = {"row": row, "col": col} | ({} if ply is None else {"ply": ply})
        response = self._post(actor, f"/games/{game_id}/move/", data)
        self.touched = {game_id}
        expected, after = self._expected_move(game, actor, row, col, ply)
        assert response.status_code == expected
        game.state = after

    def _expected_move(self, game, actor, row, col, ply):
        state = game.state
        if not (0 <= row <= 2 and 0 <= col <= 2):
            return 400, state
        if ply is not None and not 0 <= ply <= 9:
            return 400, state
        marks = game.marks_of(actor)
        if not marks:
            return 403, state
        if game.waiting or state.status.is_over:
            return 409, state
        if ply is not None and ply != state.board.move_count:
            return 409, state
        if state.board.next_mark not in marks:
            return 403, state
        if state.board[row, col] is not None:
            return 409, state
        return 302, state.play(row, col)

    @rule(actor=actors, game_id=games)
    def forfeit(self, actor, game_id):
        game = self.model[game_id]
        response = self._post(actor, f"/games/{game_id}/forfeit/")
        self.touched = {game_id}
        marks = game.marks_of(actor)
        if not marks:
            assert response.status_code == 403
        elif game.waiting or game.state.status.is_over:
            assert response.status_code == 409
        elif game.state.board.next_mark not in marks:
            assert response.status_code == 403
        else:
            assert response.status_code == 302
            game.state = game.state.forfeit(game.state.board.next_mark)

    @rule(actor=actors, game_id=games)
    def abort(self, actor, game_id):
        game = self.model[game_id]
        response = self._post(actor, f"/games/{game_id}/abort/")
        self.touched = {game_id}
        if not game.marks_of(actor):
            assert response.status_code == 403
        elif game.state.status.is_over or game.state.board.move_count >= 2:
            assert response.status_code == 409
        else:
            assert response.status_code == 302
            game.state = rules.GameState(game.state.board, rules.Status.ABORTED)
            game.waiting = False

    @rule(target=games, actor=actors, game_id=games)
    def rematch(self, actor, game_id):
        game = self.model[game_id]
        response = self._post(actor, f"/games/{game_id}/rematch/")
        self.touched = {game_id}
        if not game.marks_of(actor):
            assert response.status_code == 403
            return multiple()
        if game.waiting or not game.state.status.is_over or None in (game.x, game.o):
            assert response.status_code == 409
            return multiple()
        if game.rematch is not None:
            assert self._new_game_id(response) == game.rematch  # the same one
            return multiple()
        opponent = game.x if actor == game.o else game.o
        if self._over_the_challenge_limits(actor, opponent):
            assert response.status_code == 429
            return multiple()
        new_id = self._new_game_id(response)
        game.rematch = new_id
        self.model[new_id] = ModelGame(
            game.o, game.x, rules.GameState(), False, creator=actor
        )
        self.touched = {game_id, new_id}
        return new_id

    @rule(actor=actors, game_id=st.sampled_from([0, 10**12]))
    def act_on_a_missing_game(self, actor, game_id):
        response = self._post(actor, f"/games/{game_id}/move/", {"row": 1, "col": 1})
        assert response.status_code == 404

    # -- checks after every step ---------------------------------------------

    @invariant()
    def the_app_agrees_with_the_model(self):
        stored = {
            game.pk: game
            for game in Game.objects.select_related("player_x", "player_o", "series")
        }
        assert set(stored) == set(self.model)
        for game_id, game in self.model.items():
            if game_id in self.touched:
                response = self.clients["spectator"].get(f"/games/{game_id}/state.json")
                assert response.status_code == 200
                snapshot = response.json()
            else:
                snapshot = presentation.snapshot(stored[game_id])
            assert snapshot == snapshot | _expected_snapshot(game), game_id
        call_command("check_games", stdout=StringIO())


def _expected_snapshot(game: ModelGame) -> dict:
    state = game.state
    over = not game.waiting and state.status.is_over
    line = (
        state.winning_line
        if state.status in (rules.Status.X_WON, rules.Status.O_WON)
        else None
    )
    return {
        "status": game.status,
        "player_x": game.x,
        "player_o": game.o,
        "current_player": None if game.waiting or over else state.board.next_mark.value,
        "winner": state.winner.value if over and state.winner else None,
        "winning_line": [list(cell) for cell in rules.line_cells(line)]
        if line is not None
        else None,
        "ply": state.board.move_count,
        "board": [
            [mark.value if mark else None for mark in row] for row in state.board.rows()
        ],
    }


@pytest.mark.hypothesis  # among the slow tests (tests/support/tiers.py)
@pytest.mark.django_db
def test_random_play_agrees_with_the_rules():
    run_state_machine_as_test(
        PlayMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            derandomize=SCALE <= 1,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
