"""Private games: either player marks a game private (or public again); once
started, a private game is found by nobody but its players (Game.objects.
visible_to, sql.GAME_PAGE_READ). A new game is private when its creator asked
for that on their account (create_game reads accounts.models.new_games_private)."""

from django.contrib.auth.base_user import AbstractBaseUser as User

from .. import signals
from ..models import Game
from ..refusals import GameNotFound, NotAPlayer
from .transactions import atomic_action, locked_game


@atomic_action
def set_private(*, game_id: int, user: User, private: bool) -> Game:
    """`user`, a player of the game, makes it private (or public). The version
    moves, so that every page of it (cached or live) shows the new state, and
    a visitor's open stream finds it gone at its next fetch."""
    game = locked_game(game_id)
    if not game.is_player(user):
        # A private game past waiting is not found by others (visible_to).
        hidden = game.is_private and not game.is_waiting
        raise GameNotFound() if hidden else NotAPlayer()
    if game.is_private != private:
        game.is_private = private
        game.version += 1
        game.save(update_fields=["is_private", "version"])
        signals.changed(game)
    return game
