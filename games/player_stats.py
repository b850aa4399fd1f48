"""A player's stats as their pages show them: the values a record, a streak and
an archive page read into, and the archive's filters. Plain values, no models:
the queries that fill them are on the models' managers
(`PlayerRecord.objects.record_of`, `PlayerResult.objects.streak`,
`PlayerResult.objects.archive_page`, `Series.objects.head_to_head`)."""

from dataclasses import dataclass, field

from django.utils.translation import gettext_lazy, pgettext_lazy

from . import rules
from .result_rows import ABORTED, SELF_PLAY

# A forfeit is a loss: in the "lost" filter and in a losing streak.
LOSSES = [rules.Outcome.LOSS, rules.Outcome.FORFEIT]

# Archive filter values (the `result` query parameter, English and stable), the
# label people read (translated when shown) and the outcomes
# (PlayerResult.outcome) each selects.
RESULT_FILTERS: dict[str, tuple[str, list[str]]] = {
    "won": (gettext_lazy("Won"), [rules.Outcome.WIN]),
    "lost": (gettext_lazy("Lost (forfeits included)"), LOSSES),
    "forfeited": (gettext_lazy("Forfeited"), [rules.Outcome.FORFEIT]),
    "draw": (pgettext_lazy("a game's outcome", "Draw"), [rules.Outcome.DRAW]),
    "self-play": (gettext_lazy("Against yourself"), [SELF_PLAY]),
    "aborted": (pgettext_lazy("a game's outcome", "Aborted"), [ABORTED]),
}


@dataclass(slots=True)
class Tally:
    """Wins, losses (on the board), forfeits and draws of one side, or both."""

    wins: int = 0
    losses: int = 0
    forfeits: int = 0
    draws: int = 0

    @property
    def played(self) -> int:
        return self.wins + self.losses + self.forfeits + self.draws

    @property
    def all_losses(self) -> int:
        """Forfeits count as losses."""
        return self.losses + self.forfeits


@dataclass(slots=True)
class Record:
    as_x: Tally = field(default_factory=Tally)
    as_o: Tally = field(default_factory=Tally)
    self_play: int = 0

    @property
    def total(self) -> Tally:
        x, o = self.as_x, self.as_o
        return Tally(
            x.wins + o.wins,
            x.losses + o.losses,
            x.forfeits + o.forfeits,
            x.draws + o.draws,
        )


@dataclass(frozen=True, slots=True)
class Streak:
    """The current run of the same result: `kind` is win, loss or draw."""

    kind: str | None = None
    length: int = 0


@dataclass(frozen=True, slots=True)
class ArchivePage[Result]:
    """One page of a player's finished games (PlayerResult rows), newest first."""

    results: list[Result]
    newer_than: int | None  # cursor for the "newer" link (after=), or None
    older_than: int | None  # cursor for the "older" link (before=), or None
