"""What every game service shares: one transaction per service (`atomic_action`)
and the locked read of a game (`locked_game`)."""

from collections.abc import Callable
from functools import wraps

from django.db import IntegrityError, transaction

from ..field_lists import LOCKED_FIELDS
from ..models import Game
from ..refusals import Conflict, GameNotFound


def locked_game(game_id: int) -> Game:
    """The game, its row locked until the transaction ends; GameNotFound if there
    is no such game (or `game_id` could not be one)."""
    try:
        return (
            Game.objects.select_for_update(of=("self",))
            .select_related("player_x", "player_o")
            .only(*LOCKED_FIELDS)
            .get(pk=game_id)
        )
    except (Game.DoesNotExist, ValueError, TypeError, OverflowError):
        raise GameNotFound() from None


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
