"""What a game's end counts in: its series' score, each player's record and the
rows of their history; and the recount when staff delete games. Each runs inside
the transaction of the service that ended (or deleted) the game."""

from django.db import connection
from django.db.models import Case, Count, F, PositiveIntegerField, Q, When

from .. import rules, signals, sql
from ..choices import RESULT_STATUSES, GameStatus
from ..models import Game, PlayerRecord, PlayerResult, Series
from ..result_rows import COUNTERS, ResultRow, counter_for, result_rows
from .transactions import atomic_action


def record_end(game: Game, state: rules.GameState) -> None:
    """The saved `state` ended the game. In the same transaction: a result
    counted in the series and both records, an aborted game listed in the
    players' histories; and the game_ended event after commit."""
    winner = state.winner
    if state.status.has_result:
        _count_in_series(game, winner)
        _record_results(game)
    else:
        _list_aborted(game)
    signals.ended(game, winner=winner.value if winner else None)


def _count_in_series(game: Game, winner: rules.Mark | None) -> None:
    """Count a finished game in its series: one UPDATE in the same transaction."""
    series = Series.objects.filter(pk=game.series_id)
    if winner is None:
        series.update(draws=F("draws") + 1)
        return
    winner_id = game.player_x_id if winner is rules.Mark.X else game.player_o_id
    won_by_a = Q(player_a_id=winner_id)
    count = PositiveIntegerField()
    series.update(
        a_wins=Case(
            When(won_by_a, then=F("a_wins") + 1),
            default=F("a_wins"),
            output_field=count,
        ),
        b_wins=Case(
            When(won_by_a, then=F("b_wins")),
            default=F("b_wins") + 1,
            output_field=count,
        ),
    )


def _record_results(game: Game) -> None:
    """The finished game's rows in each player's history, and +1 on each player's
    record counter, in the same transaction."""
    rows = sorted(result_rows(game.player_x_id, game.player_o_id, game.status))
    PlayerResult.objects.bulk_create(
        PlayerResult(game=game, **row._asdict()) for row in rows
    )
    _add_to_records(rows)


def _add_to_records(rows: list[ResultRow]) -> None:
    """+1 on each row's counter in its player's record (sql.RECORDS_ADD). Rows come
    in player-id order, so concurrent game ends lock records in the same order
    and cannot deadlock."""
    values = []
    for row in rows:
        counter = counter_for(row.mark, row.outcome)
        values += [row.player_id, *(int(name == counter) for name in COUNTERS)]
    with connection.cursor() as cursor:
        cursor.execute(sql.RECORDS_ADD[len(rows)], values)


def _list_aborted(game: Game) -> None:
    """The aborted game's rows in each player's history (the archive lists it);
    no record, series or streak counts it."""
    PlayerResult.objects.bulk_create(
        PlayerResult(game=game, **row._asdict())
        for row in result_rows(game.player_x_id, game.player_o_id, game.status)
    )


@atomic_action
def delete_games(*, game_ids: list[int]) -> int:
    """Delete games (staff, from the admin) and recount what they were counted in:
    the records of their players and the series of their pairs. Returns how many
    games were deleted."""
    games = Game.objects.select_for_update(of=("self",)).filter(pk__in=game_ids)
    players = set(
        PlayerResult.objects.filter(game__in=games).values_list("player", flat=True)
    )
    series_ids = set(games.exclude(series=None).values_list("series", flat=True))
    deleted = games.count()
    games.delete()
    for player_id in sorted(players):
        _recount_record(player_id)
    for series_id in sorted(series_ids):
        _recount_series(series_id)
    return deleted


def _recount_record(player_id: int) -> None:
    tally = PlayerResult.objects.filter(player_id=player_id).counters()[player_id]
    counts = {counter: tally[counter] for counter in COUNTERS}
    PlayerRecord.objects.filter(player_id=player_id).update(**counts)


def _recount_series(series_id: int) -> None:
    series = Series.objects.get(pk=series_id)
    a = series.player_a_id
    won_by_a = Q(status__in=rules.statuses_won_by(rules.Mark.X), player_x=a) | Q(
        status__in=rules.statuses_won_by(rules.Mark.O), player_o=a
    )
    totals = Game.objects.filter(series=series, status__in=RESULT_STATUSES).aggregate(
        a_wins=Count("id", filter=won_by_a),
        decided=Count("id", filter=~Q(status=GameStatus.DRAW)),
        draws=Count("id", filter=Q(status=GameStatus.DRAW)),
    )
    Series.objects.filter(pk=series_id).update(
        a_wins=totals["a_wins"],
        b_wins=totals["decided"] - totals["a_wins"],
        draws=totals["draws"],
    )
