"""Every write to a game happens here, one transaction per action.

Each action locks the game row (`select_for_update`; on SQLite the IMMEDIATE
transaction serialises writers instead), lets `games.rules` decide, writes the
Move and the Game together, and sends its signals (games.signals) and its
live change (games.live.publish_on_commit) only after commit. A move, the
busiest action, decides before it takes the write lock and then writes only if
the game is still as it read it (see `play_move`). A rejected action raises a
`rules.Rejected` subclass (games.rules, games.exceptions) and leaves the stored
game untouched.
"""

import hmac
import secrets
from collections.abc import Callable
from functools import partial, wraps
from typing import Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser as User
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Count, Exists, F, PositiveIntegerField, Q, When
from django.utils import timezone
from django.utils.translation import gettext_lazy, ngettext

from . import live, rules, signals, sql
from .exceptions import (
    AlreadyInGame,
    Blocked,
    CannotBlockSelf,
    Conflict,
    GameFull,
    GameNotFinished,
    GameNotFound,
    GameNotStarted,
    InvalidSide,
    InvitationGone,
    InvitationNotFound,
    InvitationOnly,
    NoOpponent,
    NotAPlayer,
    PlayerLeft,
    StaleMove,
    TooManyOpenGames,
    TooManyUnstartedGames,
)
from .models import (
    GAME_ROW_PLAYERS,
    RESULT_STATUSES,
    Block,
    Game,
    GameStatus,
    Invitation,
    Move,
    PlayerRecord,
    PlayerResult,
    Series,
)
from .results import COUNTERS, ResultRow, counter_for, result_rows

Side = Literal["x", "o", "random"]
SIDES: tuple[Side, ...] = ("x", "o", "random")


# The locked row: every field of the game (services save it back) and of its
# players what services read: the name (the signals) and whether the account is
# closed. Fewer columns make the query of every action cheaper to build.
LOCKED_FIELDS = (
    *(
        field.name
        for field in Game._meta.concrete_fields
        if field.name not in ("player_x", "player_o")
    ),
    "player_x__username",
    "player_x__is_active",
    "player_o__username",
    "player_o__is_active",
)


def _locked_game(game_id: int) -> Game:
    try:
        return (
            Game.objects.select_for_update(of=("self",))
            .select_related("player_x", "player_o")
            .only(*LOCKED_FIELDS)
            .get(pk=game_id)
        )
    except (Game.DoesNotExist, ValueError, TypeError, OverflowError):
        raise GameNotFound() from None


def _after_commit(signal, **payload) -> None:
    send: Callable[[], object] = partial(signal.send, sender=Game, **payload)
    transaction.on_commit(send)


def atomic_action[**P, R](service: Callable[P, R]) -> Callable[P, R]:
    """`service` runs in one transaction; a constraint violation (a write that
    raced another) becomes a Conflict."""

    @wraps(service)
    def in_transaction(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with transaction.atomic():
                return service(*args, **kwargs)
        except IntegrityError as exc:
            raise Conflict() from exc

    return in_transaction


def _series_for(player_1, player_2) -> Series:
    low, high = sorted((player_1, player_2), key=lambda user: user.pk)
    series, _ = Series.objects.get_or_create(player_a=low, player_b=high)
    return series


def _score(game: Game, winner: rules.Mark | None) -> None:
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


# +1 on a counter of each player's record, the record created if missing: one
# statement for the one or two rows of a finished game. The ORM's
# update_conflicts can only overwrite a column, not add to it; created and
# counted up through the ORM, the records cost two more statements
# (docs/performance.md, "The records write of a finished game").
RECORD_COLUMNS = ("player", *COUNTERS)


def _records_add(rows: int) -> str:
    table = sql.table(PlayerRecord)
    one_row = "(" + ", ".join(["%s"] * len(RECORD_COLUMNS)) + ")"
    counters = [sql.column(PlayerRecord, counter) for counter in COUNTERS]
    added = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in counters)
    return f"""
        INSERT INTO {table} ({sql.columns(PlayerRecord, RECORD_COLUMNS)})
        VALUES {", ".join([one_row] * rows)}
        ON CONFLICT ({sql.column(PlayerRecord, "player")}) DO UPDATE SET {added}
    """


RECORDS_ADD = {rows: _records_add(rows) for rows in (1, 2)}


def _add_to_records(rows: list[ResultRow]) -> None:
    """+1 on each row's counter in its player's record (RECORDS_ADD). Rows come
    in player-id order, so concurrent game ends lock records in the same order
    and cannot deadlock."""
    values = []
    for row in rows:
        counter = counter_for(row.mark, row.outcome)
        values += [row.player_id, *(int(name == counter) for name in COUNTERS)]
    with connection.cursor() as cursor:
        cursor.execute(RECORDS_ADD[len(rows)], values)


def _list_aborted(game: Game) -> None:
    """The aborted game's rows in each player's history (the archive lists it);
    no record, series or streak counts it."""
    PlayerResult.objects.bulk_create(
        PlayerResult(game=game, **row._asdict())
        for row in result_rows(game.player_x_id, game.player_o_id, game.status)
    )


# The columns a new state writes: what _apply sets, the order of the moves and
# the time of the write.
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


def _apply(game: Game, state: rules.GameState) -> None:
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


def _save(game: Game, state: rules.GameState) -> None:
    _apply(game, state)
    game.save(update_fields=[*STATE_FIELDS, "aborted_by"])
    _after_save(game, state)
    # A forfeit or an abort; an aborted game with a free side was an open game.
    live.publish_on_commit(live.Change.of(game, open_games=not game.has_both_players))


def _after_save(game: Game, state: rules.GameState) -> None:
    """What a saved state brings, in the same transaction: the series score and
    records of a finished game, and the game_ended event."""
    winner = state.winner
    if state.status.has_result:
        _score(game, winner)
        _record_results(game)
    elif state.status.is_over:
        _list_aborted(game)
    if state.status.is_over:
        _after_commit(
            signals.game_ended,
            game=game,
            status=game.status,
            winner=winner.value if winner else None,
        )


def _check_open_limit(creator) -> None:
    limit = settings.GAMES_MAX_OPEN_PER_USER
    if Game.objects.open_by(creator).count() >= limit:
        raise TooManyOpenGames(
            ngettext(
                "You already have %(limit)s open game waiting for players. "
                "Wait for someone to join it.",
                "You already have %(limit)s open games waiting for players. "
                "Wait for someone to join one of them.",
                limit,
            )
            % {"limit": limit}
        )


def _check_unstarted_limits(creator, opponent) -> None:
    """Nobody can flood someone's lobby: games against others that the opponent
    has not answered with a move are limited in total and per opponent."""
    counts = Game.objects.unstarted_by(creator).aggregate(
        total=Count("id"),
        against=Count("id", filter=Q(player_x=opponent) | Q(player_o=opponent)),
    )
    per_user = settings.GAMES_MAX_UNSTARTED_PER_USER
    per_opponent = settings.GAMES_MAX_UNSTARTED_PER_OPPONENT
    if counts["total"] >= per_user:
        raise TooManyUnstartedGames(
            ngettext(
                "You already have %(limit)s game in which your opponent has not "
                "moved yet. Wait for them to move, or abort that game.",
                "You already have %(limit)s games in which your opponent has not "
                "moved yet. Wait for them to move, or abort one of those games.",
                per_user,
            )
            % {"limit": per_user}
        )
    if counts["against"] >= per_opponent:
        raise TooManyUnstartedGames(
            ngettext(
                "You already have %(limit)s game against %(username)s in which "
                "they have not moved yet. Wait for them to move, or abort that game.",
                "You already have %(limit)s games against %(username)s in which "
                "they have not moved yet. Wait for them to move, or abort one of "
                "those games.",
                per_opponent,
            )
            % {"limit": per_opponent, "username": opponent.get_username()}
        )


def _check_not_blocked(*, blocker, user) -> None:
    if Block.objects.blocks(blocker=blocker, blocked=user):
        raise Blocked(blocker)


@atomic_action
def create_game(
    *,
    creator: User,
    opponent: User | None = None,
    side: Side = "x",
    rematch_of: Game | None = None,
) -> Game:
    """A new game. `opponent` None opens it to anyone; `creator` again is self-play."""
    if side not in SIDES:
        raise InvalidSide()
    if side == "random":
        side = secrets.choice(("x", "o"))
    if opponent is None or opponent.pk != creator.pk:
        # Lock the creator's row so that concurrent creates count correctly,
        # and the opponent's, so that a game cannot start against an account
        # being closed (close_account); in id order, against deadlocks.
        players = {creator.pk} | ({opponent.pk} if opponent else set())
        locked = get_user_model().objects.select_for_update().filter(pk__in=players)
        if not all(player.is_active for player in locked.order_by("pk")):
            raise PlayerLeft()
        if opponent is None:
            _check_open_limit(creator)
        else:
            _check_not_blocked(blocker=opponent, user=creator)
            _check_unstarted_limits(creator, opponent)
    x, o = (creator, opponent) if side == "x" else (opponent, creator)
    game = Game.objects.create(
        player_x=x,
        player_o=o,
        series=None if opponent is None else _series_for(x, o),
        status=GameStatus.WAITING if opponent is None else GameStatus.IN_PROGRESS,
        rematch_of=rematch_of,
        created_by=creator,
    )
    _after_commit(signals.game_created, game=game, player_x=x, player_o=o)
    live.publish_on_commit(live.Change.of(game, open_games=game.is_waiting))
    return game


@atomic_action
def join_game(*, game_id: int, user: User) -> Game:
    """Take the free side of an open game (not an invitation: join_invitation)."""
    game = _locked_game(game_id)
    if Invitation.objects.filter(game=game).exists():
        raise InvitationOnly()
    return _join(game, user)


def _join(game: Game, user) -> Game:
    """`user` takes the free side of the locked open `game`."""
    if game.is_aborted:
        raise rules.GameOver(
            gettext_lazy("This game was aborted: it cannot be joined.")
        )
    if game.is_player(user):
        raise AlreadyInGame(
            gettext_lazy("You created this game: share its address with an opponent.")
            if game.is_waiting
            else None
        )
    if not game.is_waiting:
        raise GameFull()
    mark = rules.Mark.O if game.player_o_id is None else rules.Mark.X
    _check_not_blocked(blocker=game.player_for(mark.other), user=user)
    setattr(game, f"player_{mark.lower()}", user)
    game.status = GameStatus.IN_PROGRESS
    game.series = _series_for(game.player_x, game.player_o)
    game.version += 1
    game.save(
        update_fields=[
            "player_x",
            "player_o",
            "status",
            "series",
            "version",
            "updated_at",
        ]
    )
    _after_commit(signals.game_joined, game=game, player=user, mark=mark.value)
    live.publish_on_commit(live.Change.of(game, open_games=True))
    return game


# 32 random bytes: a 43-character secret (Invitation.secret), 256 bits.
INVITATION_BYTES = 32


@atomic_action
def create_invitation(*, creator: User, side: Side = "x") -> Invitation:
    """An open game only the holder of its link may join (Invitation); it counts
    towards the creator's open-game limit like any open game. The creator
    withdraws it by aborting the game."""
    game = create_game(creator=creator, side=side)
    return Invitation.objects.create(
        game=game, secret=secrets.token_urlsafe(INVITATION_BYTES)
    )


def invited_game(*, game_id: int, secret: str) -> Game:
    """The game the link (`game_id`, `secret`) invites to, with its players, as
    it is now: InvitationNotFound unless such a link was ever made (the secret
    compared in constant time), InvitationGone once it cannot be joined (joined,
    aborted or withdrawn)."""
    try:
        game = (
            Game.objects.select_related(*GAME_ROW_PLAYERS, "invitation")
            .filter(invitation__isnull=False)
            .get(pk=game_id)
        )
    except (Game.DoesNotExist, ValueError, TypeError, OverflowError):
        raise InvitationNotFound() from None
    if not hmac.compare_digest(game.invitation.secret.encode(), secret.encode()):
        raise InvitationNotFound()
    if not game.is_waiting:
        raise InvitationGone(
            gettext_lazy(
                "This invitation was withdrawn: the game was aborted before "
                "anyone joined."
            )
            if game.is_aborted
            else gettext_lazy(
                "This invitation has been used: someone already joined the game."
            )
        )
    return game


@atomic_action
def join_invitation(*, game_id: int, secret: str, user: User) -> Game:
    """`user` accepts the invitation (`game_id`, `secret`): takes the free side."""
    invited_game(game_id=game_id, secret=secret)
    return _join(_locked_game(game_id), user)


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
        _apply(game, state)
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
                _after_commit(
                    signals.move_made,
                    game=game,
                    move=move,
                    player=user,
                    mark=mark.value,
                    row=row,
                    col=col,
                )
                live.publish_on_commit(live.Change.of(game))
                _after_save(game, state)
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


_User = Game._meta.get_field("player_x").related_model

# What a move reads of the game (in the model's field order, as Game.from_db
# wants it; the other fields are loaded only if something asks for them) and of
# its players: whether each one's account is open.
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
MOVE_READ = f"""
    SELECT {sql.columns(Game, MOVE_READ_FIELDS, prefix="game.")},
           {sql.columns(_User, ["is_active"], prefix="player_x.")},
           {sql.columns(_User, ["is_active"], prefix="player_o.")}
    FROM {sql.table(Game)} game
    LEFT JOIN {sql.table(_User)} player_x
        ON player_x.{sql.column(_User, "id")} = game.{sql.column(Game, "player_x")}
    LEFT JOIN {sql.table(_User)} player_o
        ON player_o.{sql.column(_User, "id")} = game.{sql.column(Game, "player_o")}
    WHERE game.{sql.column(Game, "id")} = %s
"""
# The moved game, written only if nobody changed it since it was read: the
# values of STATE_FIELDS, then the game's id and the version read.
MOVE_UPDATE = f"""
    UPDATE {sql.table(Game)}
    SET {", ".join(f"{sql.column(Game, field)} = %s" for field in STATE_FIELDS)}
    WHERE {sql.column(Game, "id")} = %s AND {sql.column(Game, "version")} = %s
"""
MOVE_INSERT_FIELDS = ("game", "sequence_number", "row", "col", "player", "created_at")
MOVE_INSERT = f"""
    INSERT INTO {sql.table(Move)} ({sql.columns(Move, MOVE_INSERT_FIELDS)})
    VALUES ({", ".join(["%s"] * len(MOVE_INSERT_FIELDS))})
    RETURNING {sql.column(Move, "id")}
"""


def _game_for_move(game_id: int) -> Game:
    """The game, with whether each player's account is open (`x_active`,
    `o_active`), in one statement."""
    if not sql.is_storable_pk(Game, game_id):
        raise GameNotFound()
    with connection.cursor() as cursor:
        cursor.execute(MOVE_READ, [game_id])
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
            MOVE_UPDATE,
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
            MOVE_INSERT,
            [  # MOVE_INSERT_FIELDS
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
    game = _locked_game(game_id)
    marks = game.marks_for(user)
    if not marks:
        raise NotAPlayer()
    if game.is_waiting:
        raise GameNotStarted()
    next_mark = game.state.board.next_mark
    mark = next_mark if next_mark in marks else marks[0]
    _save(game, game.state.forfeit(mark))
    return game


@atomic_action
def abort(*, game_id: int, user: User) -> Game:
    """End the game with no result: either player, on any turn, until both sides
    have moved (rules.GameState.abort); the creator may withdraw an open game."""
    game = _locked_game(game_id)
    if not game.is_player(user):
        raise NotAPlayer()
    state = game.state.abort()
    game.aborted_by = user
    _save(game, state)
    return game


@atomic_action
def rematch(*, game_id: int, user: User) -> Game:
    """A fresh game between the same players, sides swapped.

    Idempotent: when both players ask (or one double-clicks), they all land in the
    one rematch game.
    """
    game = _locked_game(game_id)
    if not game.is_player(user):
        raise NotAPlayer()
    if not game.is_finished:
        raise GameNotFinished()
    if not game.has_both_players:
        raise NoOpponent()
    existing = Game.objects.filter(rematch_of=game).first()
    if existing is not None:
        return existing
    # Sides swapped: this game's O plays X in the rematch.
    was_o = user.pk == game.player_o_id
    rematch_game = create_game(
        creator=user,
        opponent=game.player_x if was_o else game.player_o,
        side="x" if was_o else "o",
        rematch_of=game,
    )
    # The finished game's page now links to its rematch: a change its live
    # viewers must see. Its place in the lobby (updated_at) stays.
    game.version += 1
    game.save(update_fields=["version"])
    live.publish_on_commit(live.Change.of(game))
    return rematch_game


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


# -- blocking ------------------------------------------------------------------


@atomic_action
def names_changed(*, user: User) -> None:
    """`user`'s name shows differently from now on (a guest kept the account:
    accounts.guests.became_account): each of their games gets a new version,
    so every lobby's key moves (Game.objects.lobby_version), and its live
    viewers fetch the page again (the game pages' keys hold the names). A move
    decided meanwhile is decided again (play_move's compare and set)."""
    games = Game.objects.of(user)
    games.update(version=F("version") + 1, updated_at=timezone.now())
    for game in games.only("version", "player_x", "player_o").order_by("pk"):
        live.publish_on_commit(live.Change.of(game))


def _open_games_changed(blocker) -> None:
    """Who may see and join `blocker`'s open games changed: their version moves,
    and with it every lobby's key (Game.objects.lobby_version)."""
    Game.objects.open_by(blocker).update(version=F("version") + 1)


@atomic_action
def block_player(*, blocker: User, blocked: User) -> bool:
    """`blocker` accepts no new game from `blocked` from now on (Block); games
    already running go on. False if they had blocked them already."""
    if blocker.pk == blocked.pk:
        raise CannotBlockSelf()
    _, created = Block.objects.get_or_create(blocker=blocker, blocked=blocked)
    if created:
        _open_games_changed(blocker)
    return created


@atomic_action
def unblock_player(*, blocker: User, blocked: User) -> bool:
    """Lift `blocker`'s block on `blocked`; False if there was none."""
    deleted, _ = Block.objects.filter(blocker=blocker, blocked=blocked).delete()
    if deleted:
        _open_games_changed(blocker)
    return bool(deleted)


# -- accounts ------------------------------------------------------------------


@atomic_action
def close_account(*, user: User) -> None:
    """Close `user`'s account for good, in one transaction.

    The account is deactivated (deactivate_account: its unfinished games are
    settled) and gets no usable password and no email address: Django refuses
    their logins and password resets, and every session of theirs ends (the
    session hash depends on the password; inactive users are logged out). The
    user row stays, so finished games, records and head-to-heads stay and the
    username cannot be registered again. Closing a closed account does nothing.
    """
    if not deactivate_account(user=user):
        return
    account = get_user_model().objects.get(pk=user.pk)
    account.set_unusable_password()
    account.email = ""
    account.save(update_fields=["password", "email"])


@atomic_action
def deactivate_account(*, user: User) -> bool:
    """Make `user` inactive and settle their unfinished games, in one
    transaction: whoever deactivates (closing the account, staff in the admin, a
    shell; games.receivers catches a saved `is_active=False`). Each unfinished game
    is left by the rules of `_leave` and gets a new `version`, so a move decided
    while the player could still act is decided again (play_move). Every game of
    theirs gets a new `updated_at`: the lobbies that list them
    (Game.objects.lobby_version) show "(closed)". False, and nothing changed, if
    the account is inactive already (or not stored yet)."""
    # Games first, then the account row: the order rematch takes (its game,
    # then the players' rows in create_game), so the two cannot deadlock. The
    # UPDATE locks every game of theirs, finished ones too (rematch locks a
    # finished game); it touches nothing if the account is inactive already.
    still_active = get_user_model().objects.filter(pk=user.pk, is_active=True)
    Game.objects.of(user).filter(Exists(still_active)).update(updated_at=timezone.now())
    accounts = get_user_model().objects.select_for_update()
    account = accounts.filter(pk=user.pk).first()
    if account is None or not account.is_active:
        return False
    # create_game locks both players' rows too: a game created since the
    # first look is in this list, and none can start from here on.
    for game_id in _unfinished_games(account).values_list("pk", flat=True):
        _leave(game_id=game_id, user=account)
    # Written here, not only by the caller's save: the account and its games
    # change together even when that save runs outside a transaction.
    still_active.update(is_active=False)
    return True


def _unfinished_games(user):
    return (
        Game.objects.of(user)
        .filter(status__in=[GameStatus.WAITING, GameStatus.IN_PROGRESS])
        .order_by("pk")
    )


def _leave(*, game_id: int, user) -> None:
    """A leaving player leaves an unfinished game: it is aborted where the abort
    rules allow (an open game, or fewer than two moves played), forfeited by them
    where it is their turn; otherwise it stays, its page says they left, and they
    forfeit as soon as their turn comes (play_move). Either way its version
    changes: who may act in it changed."""
    game = _locked_game(game_id)
    if game.state.can_abort:
        abort(game_id=game_id, user=user)
    elif game.is_turn_of(user):
        forfeit(game_id=game_id, user=user)
    else:
        game.version += 1
        game.save(update_fields=["version", "updated_at"])
