"""Games come to be here: created against someone or open to anyone, joined,
offered by an invitation link and taken up through it, and played again
(rematch). Who may start a game with whom is checked here too: the open and
unanswered games' limits, and blocks (blocking.check_not_blocked)."""

import hmac
import secrets
from typing import Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser as User
from django.db.models import Count, Q
from django.utils.translation import gettext_lazy, ngettext

from accounts.models import new_games_private

from .. import rules, signals
from ..choices import GameStatus
from ..field_lists import GAME_ROW_PLAYERS
from ..models import Game, Invitation, Series
from ..refusals import (
    AlreadyInGame,
    GameFull,
    GameNotFinished,
    InvalidSide,
    InvitationGone,
    InvitationNotFound,
    InvitationOnly,
    NoOpponent,
    NotAPlayer,
    PlayerLeft,
    TooManyOpenGames,
    TooManyUnstartedGames,
)
from .blocking import check_not_blocked
from .transactions import atomic_action, locked_game

Side = Literal["x", "o", "random"]
SIDES: tuple[Side, ...] = ("x", "o", "random")


def _series_for(player_1, player_2) -> Series:
    low, high = sorted((player_1, player_2), key=lambda user: user.pk)
    series, _ = Series.objects.get_or_create(player_a=low, player_b=high)
    return series


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
        # being closed (settle_games_and_deactivate); in id order, against
        # deadlocks.
        players = {creator.pk} | ({opponent.pk} if opponent else set())
        locked = get_user_model().objects.select_for_update().filter(pk__in=players)
        if not all(player.is_active for player in locked.order_by("pk")):
            raise PlayerLeft()
        if opponent is None:
            _check_open_limit(creator)
        else:
            check_not_blocked(blocker=opponent, user=creator)
            _check_unstarted_limits(creator, opponent)
    x, o = (creator, opponent) if side == "x" else (opponent, creator)
    game = Game.objects.create(
        player_x=x,
        player_o=o,
        series=None if opponent is None else _series_for(x, o),
        status=GameStatus.WAITING if opponent is None else GameStatus.IN_PROGRESS,
        rematch_of=rematch_of,
        created_by=creator,
        # A rematch of a private game is private too.
        is_private=(rematch_of is not None and rematch_of.is_private)
        or new_games_private(creator),
    )
    signals.created(game, player_x=x, player_o=o)
    return game


@atomic_action
def join_game(*, game_id: int, user: User) -> Game:
    """Take the free side of an open game (not an invitation: join_invitation)."""
    game = locked_game(game_id)
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
    check_not_blocked(blocker=game.player_for(mark.other), user=user)
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
    signals.joined(game, player=user, mark=mark.value)
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
    return _join(locked_game(game_id), user)


@atomic_action
def rematch(*, game_id: int, user: User) -> Game:
    """A fresh game between the same players, sides swapped.

    Idempotent: when both players ask (or one double-clicks), they all land in the
    one rematch game.
    """
    game = locked_game(game_id)
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
    signals.changed(game)
    return rematch_game
