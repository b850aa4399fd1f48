"""The stored values of the games' choice fields, and the groups of them that
queries and constraints share: plain enums over games.rules, so that the models
and their querysets (games.queries) both read them without importing each other.

`GameStatus` is the one name for the stored status of a game: the values of
`rules.Status` (the game as the rules see it) plus `waiting`.
"""

from django.db import models
from django.utils.translation import gettext_lazy, pgettext_lazy

from . import rules


class GameStatus(models.TextChoices):
    # The values are the stored, machine-readable status (state.json); the
    # labels are what people read (the admin), translated.
    WAITING = "waiting", gettext_lazy("Waiting for an opponent")
    IN_PROGRESS = rules.Status.IN_PROGRESS.value, gettext_lazy("In progress")
    X_WON = rules.Status.X_WON.value, gettext_lazy("X won")
    O_WON = rules.Status.O_WON.value, gettext_lazy("O won")
    DRAW = rules.Status.DRAW.value, pgettext_lazy("a game's status", "Draw")
    X_FORFEITS = rules.Status.X_FORFEITS.value, gettext_lazy("X forfeited")
    O_FORFEITS = rules.Status.O_FORFEITS.value, gettext_lazy("O forfeited")
    ABORTED = rules.Status.ABORTED.value, pgettext_lazy("a game's status", "Aborted")


# Over with a result that records and series count.
RESULT_STATUSES = [GameStatus(status) for status in rules.Status if status.has_result]
# Over: no more moves can be made (a result, or aborted).
FINISHED_STATUSES = [*RESULT_STATUSES, GameStatus.ABORTED]
WON_BY_LINE = [GameStatus.X_WON, GameStatus.O_WON]


class MarkChoice(models.TextChoices):
    X = rules.Mark.X.value, "X"
    O = rules.Mark.O.value, "O"  # noqa: E741


class ResultOutcome(models.TextChoices):
    WIN = rules.Outcome.WIN.value, gettext_lazy("Won")
    LOSS = rules.Outcome.LOSS.value, gettext_lazy("Lost")
    DRAW = rules.Outcome.DRAW.value, pgettext_lazy("a game's outcome", "Draw")
    FORFEIT = rules.Outcome.FORFEIT.value, gettext_lazy("Forfeited")
    SELF_PLAY = "self_play", gettext_lazy("Self-play")
    # Listed in the archive, counted nowhere (rules.Status.ABORTED).
    ABORTED = rules.Status.ABORTED.value, pgettext_lazy("a game's outcome", "Aborted")


# The outcomes that count in a record and a streak.
UNCOUNTED_OUTCOMES = [ResultOutcome.SELF_PLAY, ResultOutcome.ABORTED]
