"""Which fields each read of a game loads and each write sets, by name: one list
per query, each with why it is that list.

Plain names, no models, so that games.models, games.sql and games.services can
all use them without importing each other. tests/games/test_field_lists.py checks
each list against the models' `_meta`: a field added, renamed or removed fails
a test until the lists (and the statements in games.sql that select them) say
so.
"""


def with_guest(*relations: str) -> tuple[str, ...]:
    """select_related() paths that load each of `relations` (users) with their
    guest row, for games.presentation.display_name: one LEFT JOIN more, no
    query more."""
    return tuple(f"{relation}__guest" for relation in relations)


# A list row of games (lobby, archive, history) shows links, names and a status
# text: lists load only these, so a row costs no datetime or unused user field.
GAME_ROW_FIELDS = (
    "status",
    "board",
    "move_count",
    "winning_line",
    "created_by",
    "aborted_by",
    "player_x__username",
    "player_o__username",
    # A closed account's name, and a guest's, are shown marked (display_name).
    "player_x__is_active",
    "player_o__is_active",
    "player_x__guest__user",
    "player_o__guest__user",
)
# The players of a game row, each with their guest row (GAME_ROW_FIELDS).
GAME_ROW_PLAYERS = ("player_x", "player_o", *with_guest("player_x", "player_o"))

# A game page reads every field of the game (attnames, in the model's order, as
# Model.from_db wants them) but the timestamps: no game page shows them, and the
# page cache keys a page by these fields (games.page_cache), where the version
# covers any change of a timestamp. A timestamp loads on access, one query.
GAME_PAGE_FIELDS = (
    "id",
    "player_x_id",
    "player_o_id",
    "status",
    "board",
    "move_count",
    "move_order",
    "winning_line",
    "version",
    "series_id",
    "rematch_of_id",
    "created_by_id",
    "aborted_by_id",
    "is_private",
)
# Of each player a game page shows the name and whether the account is open.
PAGE_PLAYER_FIELDS = ("id", "username", "is_active")
# Of the series a game page shows the score: every field.
PAGE_SERIES_FIELDS = ("id", "player_a_id", "player_b_id", "a_wins", "b_wins", "draws")

# A move reads what the rules and the compare-and-set write need (the other
# fields load only if something asks for them), in the model's order.
MOVE_READ_FIELDS = (
    "id",
    "player_x_id",
    "player_o_id",
    "status",
    "board",
    "move_count",
    "move_order",
    "version",
    "series_id",
)
# A new state of a game writes these (games.services.moves._set_state, then the
# move's compare-and-set): what the rules change, the order of the moves, the
# time.
STATE_FIELDS = (
    "board",
    "move_count",
    "status",
    "winning_line",
    "finished_at",
    "version",
    "move_order",
    "updated_at",
)
# A move's row, as the move inserts it (the id comes back).
MOVE_INSERT_FIELDS = ("game", "sequence_number", "row", "col", "player", "created_at")

# The row every other action locks: all of the game (services save it back) and
# of its players what services read, the name (the signals) and whether the
# account is open. Fewer columns make the query of every action cheaper to build.
LOCKED_FIELDS = (
    "id",
    "status",
    "board",
    "move_count",
    "move_order",
    "winning_line",
    "version",
    "series",
    "rematch_of",
    "created_by",
    "aborted_by",
    "created_at",
    "updated_at",
    "finished_at",
    "is_private",
    "player_x__username",
    "player_x__is_active",
    "player_o__username",
    "player_o__is_active",
)
# A player's record as the records write sets it: the player, then each counter
# (games.result_rows.COUNTERS, in order), 1 on the one a result adds to.
RECORD_FIELDS = (
    "player",
    "x_wins",
    "x_losses",
    "x_forfeits",
    "x_draws",
    "o_wins",
    "o_losses",
    "o_forfeits",
    "o_draws",
    "self_play",
)
