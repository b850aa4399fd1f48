"""A storm of concurrent players against a served app, recorded request by request.

Each game has two client threads, one per player, that play in rounds. In every
round both players act at the same moment: the one whose turn it is clicks a cell
twice at once (a double click: the same cell, sent twice concurrently), while the
other sends a move out of turn and, in some games, forfeits, racing the moves.
Rounds are kept in step with a barrier so that every round really is a race.
"""

import http.client
import json
import random
import threading
from dataclasses import dataclass
from functools import partial

from .browser import Browser

MAX_ROUNDS = 12  # a game ends within 9 accepted moves; every round accepts one
ROUND_TIMEOUT = 60  # seconds a player waits for the other at a round barrier
NO_ANSWER = None  # the connection failed: the server was killed mid-request


@dataclass(frozen=True)
class Outcome:
    game_id: int
    mark: str
    action: str  # "state", "move" or "forfeit"
    status: int | None
    cell: tuple[int, int] | None = None


@dataclass
class Player:
    browser: Browser
    mark: str


class Storm:
    def __init__(self, games: dict[int, tuple[Player, Player]], *, seed: int):
        self.games = games
        self.seed = seed
        self.outcomes: list[Outcome] = []
        self._recorded = threading.Condition()

    def run(self) -> list[Outcome]:
        threads = []
        for index, (game_id, players) in enumerate(sorted(self.games.items())):
            barrier = threading.Barrier(2)
            # In every fourth game, from some round on, the waiting player forfeits
            # at the same moment as the opponent's double click: 302 if it lands
            # after the opponent's move, 403 (not your turn) if before.
            forfeit_from = 1 + index % 3 if index % 4 == 0 else None
            for player in players:
                rng = random.Random(f"{self.seed}-{game_id}-{player.mark}")
                threads.append(
                    threading.Thread(
                        target=self._play,
                        args=(game_id, player, barrier, rng, forfeit_from),
                    )
                )
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return self.outcomes

    def wait_for_accepted_moves(self, count: int, timeout: float) -> bool:
        """Block until `count` moves got a 302 (or `timeout` seconds pass)."""
        with self._recorded:
            return self._recorded.wait_for(
                lambda: len(self.accepted_moves()) >= count, timeout=timeout
            )

    def accepted_moves(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.action == "move" and o.status == 302]

    def _record(self, outcome: Outcome) -> int | None:
        with self._recorded:
            self.outcomes.append(outcome)
            self._recorded.notify_all()
        return outcome.status

    def _send(self, game_id, player, action, path, fields=None, cell=None):
        try:
            status = player.browser.request(
                "POST" if fields is not None else "GET", path, fields
            ).status
        except (OSError, http.client.HTTPException):
            status = NO_ANSWER
        return self._record(Outcome(game_id, player.mark, action, status, cell))

    def _state(self, game_id: int, player: Player) -> dict | None:
        try:
            response = player.browser.get(f"/games/{game_id}/state.json")
        except (OSError, http.client.HTTPException):
            self._record(Outcome(game_id, player.mark, "state", NO_ANSWER))
            return None
        self._record(Outcome(game_id, player.mark, "state", response.status))
        return json.loads(response.body) if response.status == 200 else None

    def _move(self, game_id, player, cell, ply) -> None:
        fields = {"row": cell[0], "col": cell[1]}
        if ply is not None:
            fields["ply"] = ply
        self._send(game_id, player, "move", f"/games/{game_id}/move/", fields, cell)

    def _forfeit(self, game_id, player) -> None:
        self._send(game_id, player, "forfeit", f"/games/{game_id}/forfeit/", {})

    def _play(self, game_id, player, barrier, rng, forfeit_from) -> None:
        for round_number in range(MAX_ROUNDS):
            state = self._state(game_id, player)
            if state is None:
                barrier.abort()  # no answer: the other player stops too
                return
            if state["status"] != "in_progress":
                return  # both players read the same state after the last round
            try:
                barrier.wait(timeout=ROUND_TIMEOUT)
                forfeit = forfeit_from is not None and round_number >= forfeit_from
                self._act(game_id, player, state, rng, forfeit)
                barrier.wait(timeout=ROUND_TIMEOUT)
            except threading.BrokenBarrierError:
                return

    def _act(self, game_id, player, state, rng, forfeit: bool) -> None:
        empty = [
            (row, col)
            for row in range(3)
            for col in range(3)
            if state["board"][row][col] is None
        ]
        if state["current_player"] == player.mark:
            cell = rng.choice(empty)
            # The second click of the pair sometimes carries no `ply`.
            second_ply = state["ply"] if rng.random() < 0.6 else None
            actions = [
                partial(self._move, game_id, player, cell, state["ply"]),
                partial(self._move, game_id, player, cell, second_ply),
            ]
        else:
            actions = [partial(self._move, game_id, player, rng.choice(empty), None)]
            if forfeit:
                actions.append(partial(self._forfeit, game_id, player))
        at_once(actions)


def at_once(actions) -> None:
    """Run the actions in parallel threads released together."""
    start = threading.Barrier(len(actions))

    def run(action):
        start.wait(timeout=ROUND_TIMEOUT)
        action()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
