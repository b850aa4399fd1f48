"""Guests against the production server (several processes, the pass's
database): 20 guest creations at once from one address, under a limit of 5;
one name in four spellings at once makes one guest."""

import json

import pytest

from ..support.served import serving
from .test_accounts_served import at_once, prepared, statuses_of

pytestmark = pytest.mark.processes

LIMIT = 5
SIMULTANEOUS = 20
ADDRESS = "198.51.100.7"

INVITATIONS = """
import json
from django.contrib.auth import get_user_model
from games import services
alice, _ = get_user_model().objects.get_or_create(username="alice")
links = []
for _ in range(COUNT):
    invitation = services.create_invitation(creator=alice)
    links.append(f"/invitations/{invitation.game_id}/{invitation.secret}/")
print(json.dumps(links))
"""
GUESTS = """
from accounts.models import Guest
from games.models import Game
print(Guest.objects.count(), Game.objects.filter(status="in_progress").count())
"""


@pytest.fixture(scope="module")
def guest_limited(tmp_path_factory):
    with serving(
        tmp_path_factory.mktemp("served_guests"),
        "guests",
        workers=3,
        DJANGO_TRUSTED_PROXY_COUNT="1",
        GAMES_GUEST_CREATE_LIMIT=str(LIMIT),
        # Every test invites afresh: room for all their invitations.
        GAMES_MAX_OPEN_PER_USER="100",
    ) as app:
        yield app


def invitation_links(server, count: int) -> list[str]:
    made = server.manage(
        "shell", "-v", "0", "-c", INVITATIONS.replace("COUNT", str(count))
    )
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout.strip().splitlines()[-1])


def test_simultaneous_guest_creations_from_one_address(guest_limited):
    """Exactly LIMIT guests are made (302 to their game); the others get the 429
    page with the wait, and nothing of theirs is stored."""
    links = invitation_links(guest_limited, SIMULTANEOUS)
    browsers = [prepared(guest_limited, link, ADDRESS) for link in links]
    answers = at_once(
        [
            lambda n=n, b=b, link=link: b.post(link + "guest/", {"name": f"guest{n}"})
            for n, (b, link) in enumerate(zip(browsers, links, strict=True))
        ]
    )
    assert statuses_of(answers) == {302: LIMIT, 429: SIMULTANEOUS - LIMIT}
    for answer in answers:
        if answer.status == 429:
            assert "5 guest names were tried from your network" in answer.text
            assert 3500 < int(answer.headers["Retry-After"]) <= 3600
    counted = guest_limited.manage("shell", "-v", "0", "-c", GUESTS)
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.split() == [str(LIMIT), str(LIMIT)]
    assert "Traceback" not in guest_limited.log()


SPELLINGS = ["Racer", "RACER", "racer", "ｒａｃｅｒ"]
RACERS = """
from accounts.models import UsernameKey
print(UsernameKey.objects.filter(key="racer").count())
"""


def test_one_name_in_four_spellings_at_once_makes_one_guest(guest_limited):
    links = invitation_links(guest_limited, len(SPELLINGS))
    browsers = [
        prepared(guest_limited, link, f"203.0.113.{n + 1}")
        for n, link in enumerate(links)
    ]
    answers = at_once(
        [
            lambda b=b, link=link, name=name: b.post(link + "guest/", {"name": name})
            for b, link, name in zip(browsers, links, SPELLINGS, strict=True)
        ]
    )
    assert statuses_of(answers) == {302: 1, 400: 3}
    for answer in answers:
        if answer.status == 400:
            assert "A user with that username already exists." in answer.text
    counted = guest_limited.manage("shell", "-v", "0", "-c", RACERS)
    assert counted.stdout.split() == ["1"]
    assert "Traceback" not in guest_limited.log()
