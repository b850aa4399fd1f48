"""games.refusals: every refusal has its own HTTP status, the one docs/routes.md
documents ("Refusals"); none falls through to a default."""

from types import SimpleNamespace

import pytest

from games import refusals, rules
from games.refusals import Blocked


def every_refusal(base: type = rules.Rejected) -> set[type]:
    found = set()
    for cls in base.__subclasses__():
        found |= {cls} | every_refusal(cls)
    return found


def test_every_refusal_has_a_status_of_its_own():
    assert every_refusal() - refusals.REFUSAL_STATUS.keys() == set()


def test_the_walk_finds_the_rules_and_the_services_refusals():
    names = {cls.__qualname__ for cls in every_refusal()}
    assert {"OutsideBoard", "TooLateToAbort", "GameNotFound", "Conflict"} <= names


DOCUMENTED_STATUS = {
    "OutsideBoard": 400,
    "InvalidSide": 400,
    "CannotBlockSelf": 400,
    "NotYourTurn": 403,
    "NotAPlayer": 403,
    "Blocked": 403,
    "InvitationOnly": 403,
    "GameNotFound": 404,
    "InvitationNotFound": 404,
    "MoveRejected": 409,
    "CellOccupied": 409,
    "GameOver": 409,
    "TooLateToAbort": 409,
    "StaleMove": 409,
    "GameNotStarted": 409,
    "GameFull": 409,
    "AlreadyInGame": 409,
    "GameNotFinished": 409,
    "NoOpponent": 409,
    "PlayerLeft": 409,
    "Conflict": 409,
    "InvitationGone": 410,
    "TooManyOpenGames": 429,
    "TooManyUnstartedGames": 429,
}


@pytest.mark.parametrize("cls", sorted(every_refusal(), key=lambda c: c.__name__))
def test_each_refusal_maps_to_the_documented_status(cls):
    refusal = (
        cls(SimpleNamespace(get_username=lambda: "bob")) if cls is Blocked else cls()
    )
    assert refusals.status_for(refusal) == DOCUMENTED_STATUS[cls.__name__]
