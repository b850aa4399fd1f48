"""Why games.services refuses an action, and the HTTP status of every refusal.

Each refusal is a `rules.Rejected` with a message for people. The rules' own
refusals (a cell taken, not your turn, ...) stay in games.rules, which imports
nothing of Django; the services add those that need the database (no such game,
a limit, a block). `REFUSAL_STATUS` maps both to the status docs/routes.md
documents, and a test fails if a refusal is missing from it.

The rules' messages are English, marked with rules.gettext_noop; those here are
lazy translations. Whatever shows a refusal to a person shows
`refusal_text(exc)`, in the active language; logs and check_games keep
`exc.message` (English for the rules' own).
"""

from django.utils.translation import gettext, gettext_lazy

from . import rules


class GameNotFound(rules.Rejected):
    message = gettext_lazy("There is no such game.")


class NotAPlayer(rules.Rejected):
    message = gettext_lazy("You are not a player in this game.")


class InvalidSide(rules.Rejected):
    message = gettext_lazy("Choose a side: X, O or random.")


class StaleMove(rules.Rejected):
    message = gettext_lazy(
        "The board changed since you saw it. Here is the current board."
    )


class GameNotStarted(rules.Rejected):
    message = gettext_lazy(
        "The game has not started yet: it is waiting for an opponent to join."
    )


class GameFull(rules.Rejected):
    message = gettext_lazy("This game already has two players.")


class AlreadyInGame(rules.Rejected):
    message = gettext_lazy("You are already a player in this game.")


class GameNotFinished(rules.Rejected):
    message = gettext_lazy("A rematch can only start once the game is over.")


class TooManyOpenGames(rules.Rejected):
    message = gettext_lazy(
        "You already have the maximum number of open games waiting for players."
    )


class PlayerLeft(rules.Rejected):
    message = gettext_lazy(
        "That player has closed their account: no new games with them."
    )


class TooManyUnstartedGames(rules.Rejected):
    message = gettext_lazy(
        "You already have the maximum number of games nobody has answered."
    )


class NoOpponent(rules.Rejected):
    message = gettext_lazy("Nobody joined this game: start a new one from the lobby.")


class Blocked(rules.Rejected):
    """The other player blocked you (Block): no new game with them."""

    def __init__(self, blocker):
        super().__init__(
            gettext("%(username)s does not accept challenges from you.")
            % {"username": blocker.get_username()}
        )


class InvitationOnly(rules.Rejected):
    message = gettext_lazy(
        "This game is by invitation only: join it with the link you were sent."
    )


class InvitationNotFound(rules.Rejected):
    message = gettext_lazy("There is no such invitation: check the link you were sent.")


class InvitationGone(rules.Rejected):
    message = gettext_lazy("This invitation is no longer open.")


class CannotBlockSelf(rules.Rejected):
    message = gettext_lazy("You cannot block yourself.")


class Conflict(rules.Rejected):
    message = gettext_lazy(
        "The game changed while your action was being saved. Please try again."
    )


# 400 bad input, 403 not allowed, 404 nothing there, 409 the game's state
# refuses it, 410 an invitation closed, 429 a limit.
REFUSAL_STATUS: dict[type[rules.Rejected], int] = {
    rules.OutsideBoard: 400,
    InvalidSide: 400,
    CannotBlockSelf: 400,
    rules.NotYourTurn: 403,
    NotAPlayer: 403,
    Blocked: 403,
    InvitationOnly: 403,
    GameNotFound: 404,
    InvitationNotFound: 404,
    rules.MoveRejected: 409,
    rules.CellOccupied: 409,
    rules.GameOver: 409,
    rules.TooLateToAbort: 409,
    StaleMove: 409,
    GameNotStarted: 409,
    GameFull: 409,
    AlreadyInGame: 409,
    GameNotFinished: 409,
    NoOpponent: 409,
    PlayerLeft: 409,
    Conflict: 409,
    InvitationGone: 410,
    TooManyOpenGames: 429,
    TooManyUnstartedGames: 429,
}


def status_for(exc: rules.Rejected) -> int:
    return REFUSAL_STATUS[type(exc)]


def refusal_text(exc: rules.Rejected) -> str:
    """The refusal as a person reads it, in the active language. A message
    already translated (a lazy one, or one the services built with gettext)
    comes back as it is: no catalog has it as a message id."""
    return gettext(str(exc.message))
