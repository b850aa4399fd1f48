"""What a change to a game tells others, once it commits: the game's signals
(for whoever listens: the log lines below), the move counter of
tictactoe_site.ops.metrics, and its live change (games.live.publish_on_commit),
all sent from here. The services call one function per change; nothing is sent if the
transaction rolls back.

Receivers get keyword arguments; `game` is the committed Game row. What games
does on other apps' signals is in games.receivers.
"""

import logging
from functools import partial

from django.db import transaction
from django.dispatch import Signal, receiver

from tictactoe_site.ops import metrics

from . import live

logger = logging.getLogger(__name__)

# game, player_x, player_o (users or None for the open side)
game_created = Signal()
# game, player (the user who joined), mark
game_joined = Signal()
# game, move, player (the user), mark, row, col
move_made = Signal()
# game, status, winner (the mark "X"/"O", or None for a draw)
game_ended = Signal()


def _send_on_commit(signal: Signal, game, **payload) -> None:
    transaction.on_commit(partial(signal.send, sender=type(game), game=game, **payload))


def changed(game, *, open_games: bool = False) -> None:
    """The live change `game` (as just saved, with its new version) brings to
    its viewers and its players' lobbies (every lobby when `open_games`)."""
    ids = {game.player_x_id, game.player_o_id}
    players = tuple(pk for pk in ids if pk is not None)
    live.publish_on_commit(live.Change(game.pk, game.version, players, open_games))


def created(game, *, player_x, player_o) -> None:
    _send_on_commit(game_created, game, player_x=player_x, player_o=player_o)
    changed(game, open_games=game.is_waiting)


def joined(game, *, player, mark: str) -> None:
    _send_on_commit(game_joined, game, player=player, mark=mark)
    changed(game, open_games=True)


def moved(game, *, move, player, mark: str, row: int, col: int) -> None:
    _send_on_commit(
        move_made, game, move=move, player=player, mark=mark, row=row, col=col
    )
    transaction.on_commit(metrics.MOVES.inc)
    changed(game)


def ended(game, *, winner: str | None) -> None:
    """The game is over (its live change is the move's, forfeit's or abort's)."""
    _send_on_commit(game_ended, game, status=game.status, winner=winner)


def _player_id(user) -> str:
    """A player as a line names them: by id, never by username, as every line
    that may reach a log shipper or an error report (tictactoe_site.ops.sentry)."""
    return str(user.pk) if user is not None else "-"


@receiver(game_created)
def log_game_created(sender, *, game, player_x, player_o, **kwargs):
    logger.info(
        "event=game_created game=%s player_x=%s player_o=%s status=%s",
        game.pk,
        _player_id(player_x),
        _player_id(player_o),
        game.status,
    )


@receiver(game_joined)
def log_game_joined(sender, *, game, player, mark, **kwargs):
    logger.info(
        "event=game_joined game=%s player=%s mark=%s", game.pk, _player_id(player), mark
    )


@receiver(move_made)
def log_move_made(sender, *, game, move, player, mark, row, col, **kwargs):
    logger.info(
        "event=move_made game=%s seq=%s player=%s mark=%s row=%s col=%s",
        game.pk,
        move.sequence_number,
        _player_id(player),
        mark,
        row,
        col,
    )


@receiver(game_ended)
def log_game_ended(sender, *, game, status, winner, **kwargs):
    logger.info(
        "event=game_ended game=%s status=%s winner=%s",
        game.pk,
        status,
        winner or "-",
    )
