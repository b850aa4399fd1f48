"""What every game service shares: one transaction per service (`atomic_action`),
the locked read of a game (`locked_game`), and signals sent once the transaction
commits (`after_commit`)."""

from collections.abc import Callable
from functools import partial, wraps

from django.db import IntegrityError, transaction

from ..field_lists import LOCKED_FIELDS
from ..models import Game
from ..rejections import Conflict, GameNotFound


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


def after_commit(signal, **payload) -> None:
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
