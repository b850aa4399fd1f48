"""The few SQL statements written out by hand, where building them with the ORM on
every call was measured to cost too much (docs/performance.md): the game page's
read (Game.objects.for_page), the move's read and writes, the records write
of a finished game (games.services), and the lobby's version.

Each is one literal string, the tables and columns written out as the models
name them (their `db_table` and columns); tests/games/test_sql.py checks every name,
and each column list against its list in games.field_lists, so a renamed field
fails a test. The statements run unchanged on SQLite and PostgreSQL (plain
identifiers, `%s` parameters, ON CONFLICT and RETURNING on both).

A row read by hand goes through `read_row`, which converts each value as the ORM
converts that column (the backend's converters, then the field's).
"""

import functools
import threading
from collections.abc import Mapping, Sequence

from django.db import connection
from django.db.models import Model
from django.db.models.expressions import Col

from .choices import GameStatus
from .field_lists import GAME_PAGE_FIELDS, PAGE_PLAYER_FIELDS, PAGE_SERIES_FIELDS

# -- the game page --------------------------------------------------------------

# The game (field_lists.GAME_PAGE_FIELDS), each player (PAGE_PLAYER_FIELDS), the
# series (PAGE_SERIES_FIELDS), then whether each player is a guest: an EXISTS
# each, measured cheaper than two more LEFT JOINs (PostgreSQL plans every join
# of this unprepared statement: +124 µs a read against +32 µs; SQLite +5.6 µs
# against +2.2 µs). Parameters: the game's id, "waiting", the viewer's id: a
# waiting game of someone who blocked the viewer is not found, nor a private
# game past waiting, by anyone but its players (a visitor's id is NULL: no
# player). As Game.objects.visible_to. Named: Django's SQLite backend then fills
# them in with `%` where it would search the statement for `%s` (a quarter of
# the read's CPU).
GAME_PAGE_READ = """
    SELECT game.id, game.player_x_id, game.player_o_id, game.status, game.board,
           game.move_count, game.move_order, game.winning_line, game.version,
           game.series_id, game.rematch_of_id, game.created_by_id,
           game.aborted_by_id, game.is_private,
           player_x.id, player_x.username, player_x.is_active,
           player_o.id, player_o.username, player_o.is_active,
           series.id, series.player_a_id, series.player_b_id, series.a_wins,
           series.b_wins, series.draws,
           EXISTS (SELECT 1 FROM accounts_guest guest
                   WHERE guest.user_id = player_x.id),
           EXISTS (SELECT 1 FROM accounts_guest guest
                   WHERE guest.user_id = player_o.id)
    FROM games_game game
    LEFT JOIN auth_user player_x ON player_x.id = game.player_x_id
    LEFT JOIN auth_user player_o ON player_o.id = game.player_o_id
    LEFT JOIN games_series series ON series.id = game.series_id
    WHERE game.id = %(game)s
      AND NOT (game.status = %(waiting)s AND EXISTS (
          SELECT 1 FROM games_block block
          WHERE block.blocked_id = %(viewer)s
            AND block.blocker_id IN (game.player_x_id, game.player_o_id)
      ))
      AND (NOT (game.is_private AND game.status <> %(waiting)s)
           OR game.player_x_id = %(viewer)s OR game.player_o_id = %(viewer)s)
"""

# -- a move ---------------------------------------------------------------------

# The game (field_lists.MOVE_READ_FIELDS) and whether each player's account is
# open. Parameter: the game's id.
MOVE_READ = """
    SELECT game.id, game.player_x_id, game.player_o_id, game.status, game.board,
           game.move_count, game.move_order, game.version, game.series_id,
           player_x.is_active,
           player_o.is_active
    FROM games_game game
    LEFT JOIN auth_user player_x ON player_x.id = game.player_x_id
    LEFT JOIN auth_user player_o ON player_o.id = game.player_o_id
    WHERE game.id = %s
"""
# The moved game, written only if nobody changed it since it was read.
# Parameters: the values of field_lists.STATE_FIELDS, the game's id, the
# version read.
MOVE_UPDATE = """
    UPDATE games_game
    SET board = %s, move_count = %s, status = %s, winning_line = %s,
        finished_at = %s, version = %s, move_order = %s, updated_at = %s
    WHERE id = %s AND version = %s
"""
# The move's row (field_lists.MOVE_INSERT_FIELDS); its id comes back.
MOVE_INSERT = """
    INSERT INTO games_move (game_id, sequence_number, row, col, player, created_at)
    VALUES (%s, %s, %s, %s, %s, %s)
    RETURNING id
"""

# -- the records of a finished game ---------------------------------------------

# +1 on a counter of each player's record, the record created if missing: one
# statement for the one row (self-play) or the two rows of a finished game.
# The ORM's update_conflicts can only overwrite a column, not add to it; created
# and counted up through the ORM, the records cost two more statements
# (docs/performance.md, "The records write of a finished game"). Parameters:
# per row, the values of field_lists.RECORD_FIELDS (the player's id, then 1 on
# the counter the result adds to and 0 on the others).
RECORD_ADD_ONE = """
    INSERT INTO games_playerrecord (player_id, x_wins, x_losses, x_forfeits,
        x_draws, o_wins, o_losses, o_forfeits, o_draws, self_play)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (player_id) DO UPDATE SET
        x_wins = games_playerrecord.x_wins + excluded.x_wins,
        x_losses = games_playerrecord.x_losses + excluded.x_losses,
        x_forfeits = games_playerrecord.x_forfeits + excluded.x_forfeits,
        x_draws = games_playerrecord.x_draws + excluded.x_draws,
        o_wins = games_playerrecord.o_wins + excluded.o_wins,
        o_losses = games_playerrecord.o_losses + excluded.o_losses,
        o_forfeits = games_playerrecord.o_forfeits + excluded.o_forfeits,
        o_draws = games_playerrecord.o_draws + excluded.o_draws,
        self_play = games_playerrecord.self_play + excluded.self_play
"""
RECORD_ADD_TWO = """
    INSERT INTO games_playerrecord (player_id, x_wins, x_losses, x_forfeits,
        x_draws, o_wins, o_losses, o_forfeits, o_draws, self_play)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s),
           (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (player_id) DO UPDATE SET
        x_wins = games_playerrecord.x_wins + excluded.x_wins,
        x_losses = games_playerrecord.x_losses + excluded.x_losses,
        x_forfeits = games_playerrecord.x_forfeits + excluded.x_forfeits,
        x_draws = games_playerrecord.x_draws + excluded.x_draws,
        o_wins = games_playerrecord.o_wins + excluded.o_wins,
        o_losses = games_playerrecord.o_losses + excluded.o_losses,
        o_forfeits = games_playerrecord.o_forfeits + excluded.o_forfeits,
        o_draws = games_playerrecord.o_draws + excluded.o_draws,
        self_play = games_playerrecord.self_play + excluded.self_play
"""
# By the number of rows the finished game gives.
RECORDS_ADD = {1: RECORD_ADD_ONE, 2: RECORD_ADD_TWO}

# -- the lobby's version --------------------------------------------------------

# What Game.objects.lobby_version reads (games.queries says why each term), over
# the viewer's games and every open one. Built by the ORM, the same aggregate
# cost two fifths of a cached lobby's CPU. Parameters (named, as the game
# page's): the viewer's id, "waiting".
LOBBY_VERSION = """
    SELECT MAX(game.updated_at), COUNT(game.id), SUM(game.version), MAX(game.id),
           SUM(game.id)
    FROM games_game game
    WHERE game.player_x_id = %(viewer)s OR game.player_o_id = %(viewer)s
       OR game.status = %(waiting)s
"""


# -- running them ---------------------------------------------------------------


class Selected:
    """What a statement's row holds, column by column: the field each column
    loads (of `model`, for each `(model, attnames)` part), or None for a value
    no field describes (an EXISTS), which is left as the driver returns it."""

    def __init__(self, *parts: tuple[type[Model], Sequence[str]] | None) -> None:
        self.columns: tuple[Col | None, ...] = tuple(
            column
            for part in parts
            for column in (
                [None]
                if part is None
                else [
                    part[0]._meta.get_field(name).get_col(part[0]._meta.db_table)
                    for name in part[1]
                ]
            )
        )


class _Converters(threading.local):
    """Each Selected's converters for this thread's connection (as the ORM's
    compiler finds them: the backend's, then the field's), found once: finding
    them costs ~150 µs a read, a third of what writing the statement out saved."""

    def __init__(self) -> None:
        self.ops = None
        self.of: dict[Selected, list] = {}


_converters = _Converters()


def _converters_of(selected: Selected) -> list:
    ops = connection.ops
    if _converters.ops is not ops:  # another connection: other converters
        _converters.ops, _converters.of = ops, {}
    found = _converters.of.get(selected)
    if found is None:
        found = _converters.of[selected] = [
            (position, converters, column)
            for position, column in enumerate(selected.columns)
            if column is not None
            and (
                converters := ops.get_db_converters(column)
                + column.get_db_converters(connection)
            )
        ]
    return found


def read_row(
    statement: str, params: Sequence | Mapping, selected: Selected
) -> list | None:
    """The one row `statement` reads (None if none), each value converted as the
    ORM would convert its column (`selected`): on SQLite a timestamp made aware,
    a decimal or a UUID made one; on either database what a field's
    `from_db_value` makes of it."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for position, converters, column in _converters_of(selected):
        value = values[position]
        for converter in converters:
            value = converter(value, column, connection)
        values[position] = value
    return values


@functools.cache
def _game_page_selected(game_model: type[Model]) -> Selected:
    """What a row of GAME_PAGE_READ holds (built on first use: the user model is
    only known once the apps are)."""
    user_model = game_model._meta.get_field("player_x").related_model
    series_model = game_model._meta.get_field("series").related_model
    player = (user_model, PAGE_PLAYER_FIELDS)
    return Selected(
        (game_model, GAME_PAGE_FIELDS),
        player,
        player,
        (series_model, PAGE_SERIES_FIELDS),
        None,  # player X is a guest
        None,  # player O is a guest
    )


def read_game_page(game_model: type[Model], game_id: int, viewer_id: int | None):
    """The game of GAME_PAGE_READ as instances of `game_model`, its players (each
    with their guest row cached, as select_related("guest") leaves it) and its
    series; None when no such game is visible to `viewer_id`."""
    row = read_row(
        GAME_PAGE_READ,
        {"game": game_id, "waiting": GameStatus.WAITING, "viewer": viewer_id},
        _game_page_selected(game_model),
    )
    if row is None:
        return None
    db = connection.alias
    *values, x_is_guest, o_is_guest = row
    end = len(GAME_PAGE_FIELDS)
    game = game_model.from_db(db, GAME_PAGE_FIELDS, values[:end])
    user_model = game_model._meta.get_field("player_x").related_model
    # The user's side of Guest.user (accounts): where a user keeps their guest row.
    guest_of_user = user_model._meta.get_field("guest")
    for side, is_guest in (("player_x", x_is_guest), ("player_o", o_is_guest)):
        start, end = end, end + len(PAGE_PLAYER_FIELDS)
        if getattr(game, f"{side}_id") is not None:
            player = user_model.from_db(db, PAGE_PLAYER_FIELDS, values[start:end])
            guest_of_user.set_cached_value(
                player,
                guest_of_user.related_model.from_db(db, ["user_id"], [player.pk])
                if is_guest
                else None,
            )
            setattr(game, side, player)
    if game.series_id is not None:
        series_model = game_model._meta.get_field("series").related_model
        game.series = series_model.from_db(db, PAGE_SERIES_FIELDS, values[end:])
    return game
