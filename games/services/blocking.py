"""Blocking: a blocked player can start no new game with the blocker (nor join
their open games, nor use their invitation links); games already running go on."""

from django.contrib.auth.base_user import AbstractBaseUser as User
from django.db.models import F

from ..models import Block, Game
from ..refusals import Blocked, CannotBlockSelf
from .transactions import atomic_action


def check_not_blocked(*, blocker, user) -> None:
    """Blocked unless `blocker` accepts games from `user`."""
    if Block.objects.blocks(blocker=blocker, blocked=user):
        raise Blocked(blocker)


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
