"""A player's record, streak, head-to-head and game archive, all computed by the
database: the record from the PlayerRecord counters, the rest from PlayerResult
(one row per player per finished game, indexed by player) and Series. Every
query is a key lookup or a bounded index range scan, and a page costs the same
number of queries however many games there are."""

from dataclasses import dataclass, field

from django.db.models import F, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from .models import (
    GAME_ROW_FIELDS,
    UNCOUNTED_OUTCOMES,
    PlayerRecord,
    PlayerResult,
    ResultOutcome,
    Series,
)

LOSSES = [ResultOutcome.LOSS, ResultOutcome.FORFEIT]

# Archive filter values (the `result` query parameter) and what each selects.
RESULT_FILTERS: dict[str, tuple[str, list[str]]] = {
    "won": ("Won", [ResultOutcome.WIN]),
    "lost": ("Lost (forfeits included)", LOSSES),
    "forfeited": ("Forfeited", [ResultOutcome.FORFEIT]),
    "draw": ("Draw", [ResultOutcome.DRAW]),
    "self-play": ("Against yourself", [ResultOutcome.SELF_PLAY]),
    "aborted": ("Aborted", [ResultOutcome.ABORTED]),
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


def record_of(player) -> Record:
    """One primary-key read of the counters the services keep."""
    row = PlayerRecord.objects.filter(player=player).first()
    if row is None:
        return Record()
    return Record(
        as_x=Tally(row.x_wins, row.x_losses, row.x_forfeits, row.x_draws),
        as_o=Tally(row.o_wins, row.o_losses, row.o_forfeits, row.o_draws),
        self_play=row.self_play,
    )


def streak_of(player) -> Streak:
    """The latest counted result, and how many results since the last different
    one: two queries, each bounded by an index range (self-play and aborted
    games do not count, a forfeit is a loss)."""
    counted = PlayerResult.objects.filter(player=player).exclude(
        outcome__in=UNCOUNTED_OUTCOMES
    )
    latest = counted.values_list("outcome", flat=True).first()
    if latest is None:
        return Streak()
    same = LOSSES if latest in LOSSES else [latest]
    last_other = counted.exclude(outcome__in=same).order_by("-id").values("id")[:1]
    length = counted.filter(id__gt=Coalesce(Subquery(last_other), 0)).count()
    return Streak("loss" if latest in LOSSES else latest, length)


def head_to_head(player) -> list[tuple[object, int, int, int]]:
    """(opponent, player's wins, opponent's wins, draws) against every opponent
    with a counted game, most games first: one query, one row per opponent."""
    series = (
        Series.objects.filter(Q(player_a=player) | Q(player_b=player))
        .exclude(player_a=F("player_b"))
        .select_related("player_a", "player_b")
        .annotate(played=F("a_wins") + F("b_wins") + F("draws"))
        .filter(played__gt=0)
        .order_by("-played", "-id")
    )
    rows = []
    for pair in series:
        mine_is_a = pair.player_a_id == player.pk
        opponent = pair.player_b if mine_is_a else pair.player_a
        wins, losses = (
            (pair.a_wins, pair.b_wins) if mine_is_a else (pair.b_wins, pair.a_wins)
        )
        rows.append((opponent, wins, losses, pair.draws))
    return rows


def results_of(player) -> QuerySet[PlayerResult]:
    """The player's finished games, newest first, with what each row displays
    (and no other column)."""
    return (
        PlayerResult.objects.filter(player=player)
        .select_related("game", "game__player_x", "game__player_o", "opponent")
        .only(
            "player",
            "mark",
            "outcome",
            "opponent__username",
            "opponent__is_active",
            "game__finished_at",
            *(f"game__{field}" for field in GAME_ROW_FIELDS),
        )
    )


@dataclass(frozen=True, slots=True)
class ArchivePage:
    results: list[PlayerResult]
    newer_than: int | None  # cursor for the "newer" link (after=), or None
    older_than: int | None  # cursor for the "older" link (before=), or None


def archive_page(
    player,
    *,
    result: str = "",
    opponent=None,
    before: int | None = None,
    after: int | None = None,
    size: int = 20,
) -> ArchivePage:
    """Keyset pagination on the result id: one query of `size + 1` rows, no COUNT."""
    rows = results_of(player)
    if result:
        rows = rows.filter(outcome__in=RESULT_FILTERS[result][1])
    if opponent is not None:
        rows = rows.filter(opponent=opponent)
    if after is not None:
        page = list(rows.filter(id__gt=after).order_by("id")[: size + 1])
        more = len(page) > size
        page = page[:size][::-1]
        return ArchivePage(
            page,
            newer_than=page[0].pk if more and page else None,
            older_than=page[-1].pk if page else None,
        )
    if before is not None:
        rows = rows.filter(id__lt=before)
    page = list(rows.order_by("-id")[: size + 1])
    more = len(page) > size
    page = page[:size]
    return ArchivePage(
        page,
        newer_than=page[0].pk if before is not None and page else None,
        older_than=page[-1].pk if more else None,
    )
