"""Moves, forfeits and aborts: the actions that give a game a new state by the
rules (games.rules), each written with the Move and counted if it ends the game
(scoring.record_end)."""

from django.contrib.auth.base_user import AbstractBaseUser as User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .. import rules, signals, sql
from ..field_lists import MOVE_READ_FIELDS, STATE_FIELDS
from ..models import Game, Move
from ..refusals import (
    Conflict,
    GameNotFound,
    GameNotStarted,
    NotAPlayer,
    StaleMove,
)
from .scoring import record_end
from .transactions import atomic_action, locked_game


def _set_state(game: Game, state: rules.GameState) -> None:
    """Copy the rules' new state onto the game row (not saved yet)."""
    game.board = state.board.cells
    game.move_count = state.board.move_count
    game.status = state.status.value
    game.winning_line = (
        state.winning_line
        if state.status in (rules.Status.X_WON, rules.Status.O_WON)
        else None
    )
    game.finished_at = timezone.now() if state.status.is_over else None
    game.version += 1


def _save_end(game: Game, state: rules.GameState) -> None:
    """Save the game with the rules' new `state` (a forfeit or an abort: the
    end of the game), and count it."""
    _set_state(game, state)
    game.save(update_fields=[*STATE_FIELDS, "aborted_by"])
    record_end(game, state)
    # An aborted game with a free side was an open game.
    signals.changed(game, open_games=not game.has_both_players)


# A move decides without holding the write lock, then writes only if the game
# still has the version it read (compare and set). Another action in between (a
# move from a second tab, the opponent's forfeit) makes it read and decide again;
# a game that changes under every attempt is a Conflict. So SQLite's one writer
# holds the lock for two statements, not for the whole move. Those statements and
# the read are plain SQL: the move is the busiest write, and the ORM's Python
# would be most of its cost (docs/performance.md, "Third pass").
MOVE_ATTEMPTS = 3


def play_move(
    *, game_id: int, user: User, row: int, col: int, ply: int | None = None
) -> Game:
    """`user` puts their mark on (row, col). `ply` is the move count they saw:
    a stale or double-submitted move is rejected instead of landing on a board
    the player did not see."""
    cell = rules.cell_index(row, col)
    for _ in range(MOVE_ATTEMPTS):
        game = _game_for_move(game_id)
        seen_version = game.version
        mark, state = _decide_move(game, user, row, col, ply)
        game.move_order += str(cell)
        _set_state(game, state)
        game.updated_at = timezone.now()
        move = Move(
            game=game,
            sequence_number=game.move_count,
            row=row,
            col=col,
            player=mark.value,
            created_at=game.updated_at,
        )
        try:
            with transaction.atomic():
                if not _store_move(game, move, seen_version=seen_version):
                    continue  # the game changed since it was read
                signals.moved(
                    game, move=move, player=user, mark=mark.value, row=row, col=col
                )
                if state.status.is_over:
                    record_end(game, state)
        except IntegrityError as exc:
            raise Conflict() from exc
        return game
    raise Conflict()


def _decide_move(
    game: Game, user, row: int, col: int, ply: int | None
) -> tuple[rules.Mark, rules.GameState]:
    """The mark `user` plays and the state after the move, or the rejection."""
    marks = game.marks_for(user)
    if not marks:
        raise NotAPlayer()
    if game.is_waiting:
        raise GameNotStarted()
    if game.is_finished:
        raise rules.GameOver()
    if ply is not None and ply != game.move_count:
        raise StaleMove()
    mark = game.state.board.next_mark
    if mark not in marks:
        raise rules.NotYourTurn()
    state = game.state.play(row, col, mark=mark)
    after = state.board.next_mark
    still_playing = game.x_active if after is rules.Mark.X else game.o_active
    if not state.status.is_over and not still_playing:
        # The player to move has left (a closed or deactivated account): they
        # forfeit now that their turn has come, so the other is never left
        # waiting for ever.
        state = state.forfeit(after)
    return mark, state


def _game_for_move(game_id: int) -> Game:
    """The game, with whether each player's account is open (`x_active`,
    `o_active`), in one statement."""
    if not Game.can_be_pk(game_id):
        raise GameNotFound()
    with connection.cursor() as cursor:
        cursor.execute(sql.MOVE_READ, [game_id])
        row = cursor.fetchone()
    if row is None:
        raise GameNotFound()
    *values, x_active, o_active = row
    game = Game.from_db(connection.alias, MOVE_READ_FIELDS, values)
    game.x_active, game.o_active = bool(x_active), bool(o_active)
    return game


def _store_move(game: Game, move: Move, *, seen_version: int) -> bool:
    """Save the moved game if its stored version is still `seen_version`, and
    insert the move; False (nothing written) if the game changed meanwhile."""
    db_datetime = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            sql.MOVE_UPDATE,
            [  # STATE_FIELDS, then the row's id and version
                game.board,
                game.move_count,
                game.status,
                game.winning_line,
                db_datetime(game.finished_at),
                game.version,
                game.move_order,
                db_datetime(game.updated_at),
                game.pk,
                seen_version,
            ],
        )
        if cursor.rowcount != 1:
            return False
        cursor.execute(
            sql.MOVE_INSERT,
            [  # field_lists.MOVE_INSERT_FIELDS
                game.pk,
                move.sequence_number,
                move.row,
                move.col,
                move.player,
                db_datetime(move.created_at),
            ],
        )
        move.pk = cursor.fetchone()[0]
    return True


@atomic_action
def forfeit(*, game_id: int, user: User) -> Game:
    """Give up on your own turn: the opponent wins at once."""
    game = locked_game(game_id)
    marks = game.marks_for(user)
    if not marks:
        raise NotAPlayer()
    if game.is_waiting:
        raise GameNotStarted()
    next_mark = game.state.board.next_mark
    mark = next_mark if next_mark in marks else marks[0]
    _save_end(game, game.state.forfeit(mark))
    return game


@atomic_action
def abort(*, game_id: int, user: User) -> Game:
    """End the game with no result: either player, on any turn, until both sides
    have moved (rules.GameState.abort); the creator may withdraw an open game."""
    game = locked_game(game_id)
    if not game.is_player(user):
        raise NotAPlayer()
    state = game.state.abort()
    game.aborted_by = user
    _save_end(game, state)
    return game
