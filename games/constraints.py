"""What the database holds every game to: the check constraints of Game, each
named for the invariant it keeps, so that even a buggy or racing writer cannot
store an impossible game (check_games reports what a constraint cannot see).
"""

from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Length, Replace
from django.db.models.lookups import Exact, In

from . import rules
from .choices import FINISHED_STATUSES, WON_BY_LINE, GameStatus


def _count(field: str, mark: str):
    """SQL for how many times `mark` occurs in the board string."""
    return Length(field) - Length(Replace(field, Value(mark), Value("")))


X_COUNT = _count("board", rules.Mark.X)
O_COUNT = _count("board", rules.Mark.O)
EMPTY_COUNT = _count("board", rules.EMPTY)


def _is_player(field: str) -> Q:
    """SQL: `field` (a user) is null, or is one of the game's players."""
    return (
        Q(**{f"{field}__isnull": True})
        | Q(player_x__isnull=False, **{field: F("player_x")})
        | Q(player_o__isnull=False, **{field: F("player_o")})
    )


GAME_CONSTRAINTS = [
    models.CheckConstraint(
        condition=Q(status__in=GameStatus.values), name="game_status_valid"
    ),
    models.CheckConstraint(
        condition=Q(move_count__gte=0, move_count__lte=rules.CELLS),
        name="game_move_count_range",
    ),
    models.CheckConstraint(
        # Only X, O and EMPTY: the three counts add up to the length.
        condition=Q(
            Exact(Length("board"), rules.CELLS),
            Exact(X_COUNT + O_COUNT + EMPTY_COUNT, rules.CELLS),
            Exact(Length("move_order"), F("move_count")),
            move_count=X_COUNT + O_COUNT,
        ),
        name="game_board_well_formed",
    ),
    models.CheckConstraint(
        condition=In(X_COUNT - O_COUNT, [0, 1]),
        name="game_x_moves_first",
        violation_error_message="X moves first and players alternate.",
    ),
    models.CheckConstraint(
        condition=Q(winning_line__isnull=True)
        | Q(winning_line__gte=0, winning_line__lt=len(rules.LINES)),
        name="game_winning_line_range",
    ),
    models.CheckConstraint(
        condition=Q(status__in=WON_BY_LINE, winning_line__isnull=False)
        | (~Q(status__in=WON_BY_LINE) & Q(winning_line__isnull=True)),
        name="game_winning_line_iff_won",
    ),
    models.CheckConstraint(
        # Waiting, or an open game withdrawn: one player and no move.
        condition=(
            Q(
                status__in=[GameStatus.WAITING, GameStatus.ABORTED],
                move_count=0,
            )
            & (
                Q(player_x__isnull=True, player_o__isnull=False)
                | Q(player_x__isnull=False, player_o__isnull=True)
            )
        )
        | (
            ~Q(status=GameStatus.WAITING)
            & Q(player_x__isnull=False, player_o__isnull=False)
        ),
        name="game_players_present",
    ),
    models.CheckConstraint(
        condition=Q(status__in=FINISHED_STATUSES, finished_at__isnull=False)
        | (~Q(status__in=FINISHED_STATUSES) & Q(finished_at__isnull=True)),
        name="game_finished_at_iff_finished",
    ),
    models.CheckConstraint(
        condition=~Q(status=GameStatus.DRAW) | Q(move_count=rules.CELLS),
        name="game_draw_only_on_full_board",
    ),
    models.CheckConstraint(condition=Q(version__gte=1), name="game_version_positive"),
    models.CheckConstraint(
        condition=(
            Q(series__isnull=True)
            & (Q(player_x__isnull=True) | Q(player_o__isnull=True))
        )
        | Q(
            series__isnull=False,
            player_x__isnull=False,
            player_o__isnull=False,
        ),
        name="game_series_once_started",
    ),
    models.CheckConstraint(
        condition=~Q(status=GameStatus.ABORTED)
        | Q(move_count__lt=rules.ABORTABLE_BELOW_MOVES),
        name="game_aborted_early",
    ),
    models.CheckConstraint(
        condition=Q(status=GameStatus.ABORTED, aborted_by__isnull=False)
        | (~Q(status=GameStatus.ABORTED) & Q(aborted_by__isnull=True)),
        name="game_aborted_by_iff_aborted",
    ),
    models.CheckConstraint(
        condition=_is_player("aborted_by"), name="game_aborted_by_player"
    ),
    models.CheckConstraint(
        condition=_is_player("created_by"), name="game_created_by_player"
    ),
]
