"""Every write to a game happens here, one transaction per action.

Each action locks the game row (`select_for_update`; on SQLite the IMMEDIATE
transaction serialises writers instead), lets `games.rules` decide, writes the
Move and the Game together, and tells others through games.signals (the game's
signals and its live change, both after commit). A move, the busiest
action, decides before it takes the write lock and then writes only if the game
is still as it read it (see `play_move`). A rejected action raises a
`rules.Rejected` subclass (games.rules, games.refusals) and leaves the stored
game untouched.

The modules, by subject: `games` (create, join, invitations, rematch), `moves`
(move, forfeit, abort), `scoring` (what a game's end counts in; deleting games),
`blocking`, `privacy` (private games), `account_changes` (what leaving or a
new name does to a player's games) and `transactions` (what they all share).
Callers use the names below: `from games import services; services.play_move(...)`.
"""

from .account_changes import names_changed, settle_games_and_deactivate
from .blocking import block_player, unblock_player
from .games import (
    SIDES,
    Side,
    create_game,
    create_invitation,
    invited_game,
    join_game,
    join_invitation,
    rematch,
)
from .moves import abort, forfeit, play_move
from .privacy import set_private
from .scoring import delete_games

__all__ = [
    "SIDES",
    "Side",
    "abort",
    "block_player",
    "create_game",
    "create_invitation",
    "delete_games",
    "forfeit",
    "invited_game",
    "join_game",
    "join_invitation",
    "names_changed",
    "play_move",
    "rematch",
    "set_private",
    "settle_games_and_deactivate",
    "unblock_player",
]
