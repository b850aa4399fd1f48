"""The guest limit against the production server (several processes, the pass's
database): 20 guest creations at once from one address, under a limit of 5."""

import json

import pytest

from .support.served import serving
from .test_accounts_served import at_once, prepared, statuses_of

LIMIT = 5
SIMULTANEOUS = 20
ADDRESS = "198.51.100.7"

INVITATIONS = """
import json
from django.contrib.auth import get_user_model
from games import services
alice = get_user_model().objects.create_user(username="alice")
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
        GAMES_MAX_OPEN_PER_USER=str(SIMULTANEOUS),
    ) as app:
        yield app


def test_simultaneous_guest_creations_from_one_address(guest_limited):
    """Exactly LIMIT guests are made (302 to their game); the others get the 429
    page with the wait, and nothing of theirs is stored."""
    made = guest_limited.manage(
        "shell", "-v", "0", "-c", INVITATIONS.replace("COUNT", str(SIMULTANEOUS))
    )
    assert made.returncode == 0, made.stderr
    links = json.loads(made.stdout.strip().splitlines()[-1])
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
            assert "5 guest accounts were made from your network" in answer.text
            assert 3500 < int(answer.headers["Retry-After"]) <= 3600
    counted = guest_limited.manage("shell", "-v", "0", "-c", GUESTS)
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.split() == [str(LIMIT), str(LIMIT)]
    assert "Traceback" not in guest_limited.log()
