"""The signals games.services sends after a change to a game commits, and the
log line of each.

Receivers get keyword arguments; `game` is the committed Game row. They are
for whoever listens (the log lines below, tictactoe_site.ops.metrics); live updates
do not go through them (the services call games.live.publish_on_commit).
What games does on other apps' signals is in games.receivers.
"""

import logging

from django.dispatch import Signal, receiver

logger = logging.getLogger(__name__)

# game, player_x, player_o (users or None for the open side)
game_created = Signal()
# game, player (the user who joined), mark
game_joined = Signal()
# game, move, player (the user), mark, row, col
move_made = Signal()
# game, status, winner (the mark "X"/"O", or None for a draw)
game_ended = Signal()


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
