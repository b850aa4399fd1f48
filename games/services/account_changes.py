"""What a change to a player's account does to their games: leaving (a closed or
deactivated account: accounts.services.close_account, games.receivers) settles
the unfinished ones; a new name (a guest who kept the account) moves the version
of every one."""

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser as User
from django.db.models import Exists, F
from django.utils import timezone

from .. import signals
from ..choices import GameStatus
from ..models import Game
from .moves import abort, forfeit
from .transactions import atomic_action, locked_game


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
        signals.changed(game)


@atomic_action
def settle_games_and_deactivate(*, user: User) -> bool:
    """Settle `user`'s unfinished games and make the account inactive, in one
    transaction: the games' half of closing an account
    (accounts.services.close_account) and the whole of a deactivation (staff in
    the admin, a shell; games.receivers catches a saved `is_active=False`). Each
    unfinished game is left by the rules of `_leave` and gets a new `version`, so
    a move decided while the player could still act is decided again
    (play_move). Every game of theirs gets a new `updated_at`: the lobbies that
    list them (Game.objects.lobby_version) show "(closed)". The account row is
    locked and written here, between the games, so that no game starts against
    the leaver meanwhile. False, and nothing changed, if the account is inactive
    already (or not stored yet)."""
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
    game = locked_game(game_id)
    if game.state.can_abort:
        abort(game_id=game_id, user=user)
    elif game.is_turn_of(user):
        forfeit(game_id=game_id, user=user)
    else:
        game.version += 1
        game.save(update_fields=["version", "updated_at"])
