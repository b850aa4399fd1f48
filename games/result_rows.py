"""Which PlayerResult rows a finished game must have, and the PlayerRecord counter
each row adds 1 to: shared by the services that write them, the migration that
backfilled them and check_games that verifies them.

Plain Python over ids and the status string (no models), so the migration can use
it with historical models."""

from typing import NamedTuple

from . import rules

SELF_PLAY = "self_play"


ABORTED = rules.Status.ABORTED.value


class ResultRow(NamedTuple):
    player_id: int
    opponent_id: int | None
    mark: str
    outcome: str


def result_rows(
    player_x_id: int | None, player_o_id: int | None, status: str
) -> list[ResultRow]:
    """One row per player; a single SELF_PLAY row when one user played both sides.
    An aborted game's rows say ABORTED (no mark for self-play, no opponent when
    nobody had joined): listed in the archive, counted in no record."""
    if status == ABORTED:
        if player_x_id == player_o_id:
            return [ResultRow(player_x_id, player_x_id, "", ABORTED)]
        sides = [(player_x_id, player_o_id, "X"), (player_o_id, player_x_id, "O")]
        return [
            ResultRow(player, opponent, mark, ABORTED)
            for player, opponent, mark in sides
            if player is not None
        ]
    if player_x_id == player_o_id:
        return [ResultRow(player_x_id, player_x_id, "", SELF_PLAY)]
    finished = rules.Status(status)
    return [
        ResultRow(
            player_x_id, player_o_id, "X", rules.outcome_for(finished, rules.Mark.X)
        ),
        ResultRow(
            player_o_id, player_x_id, "O", rules.outcome_for(finished, rules.Mark.O)
        ),
    ]


# PlayerRecord counter for each outcome (prefixed by the mark: "x_wins").
_COUNTER_SUFFIX = {
    rules.Outcome.WIN: "wins",
    rules.Outcome.LOSS: "losses",
    rules.Outcome.FORFEIT: "forfeits",
    rules.Outcome.DRAW: "draws",
}
COUNTERS = [
    f"{mark}_{suffix}" for mark in ("x", "o") for suffix in _COUNTER_SUFFIX.values()
] + [SELF_PLAY]


def counter_for(mark: str, outcome: str) -> str:
    """The PlayerRecord field that one result row adds 1 to."""
    if outcome == SELF_PLAY:
        return SELF_PLAY
    return f"{mark.lower()}_{_COUNTER_SUFFIX[rules.Outcome(outcome)]}"
