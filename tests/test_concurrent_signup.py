"""Simultaneous sign-ups for one email address against the production server
(several worker processes, the current pass's database): the form check alone
would let more than one through; the unique index on LOWER(email) (migration
0005_accounts) lets exactly one, and every other one gets the form's 400, never
a 500."""

import json
import threading

import pytest

from .conftest import PASSWORD
from .served import serving

RACERS = 8
BARRIER_TIMEOUT = 60  # seconds a racer waits for the others before failing
EMAIL_TAKEN = "Another account already uses this email address."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served_signup")
    with serving(tmp_dir, "signup", workers=3) as app:
        yield app


def test_simultaneous_sign_ups_with_one_address_make_one_account(server):
    browsers = [server.browser() for _ in range(RACERS)]
    for browser in browsers:
        assert browser.get("/accounts/signup/").status == 200  # the CSRF cookie
    barrier = threading.Barrier(RACERS, timeout=BARRIER_TIMEOUT)
    responses = [None] * RACERS

    def sign_up(index: int) -> None:
        fields = {
            "username": f"racer{index}",
            # The same address, in other cases.
            "email": "Same@Example.com" if index % 2 else "same@example.COM",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        barrier.wait()
        responses[index] = browsers[index].post("/accounts/signup/", fields)

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    statuses = sorted(response.status for response in responses)
    assert statuses == [302] + [400] * (RACERS - 1)
    for response in responses:
        if response.status == 400:
            assert EMAIL_TAKEN in response.text

    result = server.manage(
        "shell",
        "-v",
        "0",
        "-c",
        "import json; from django.contrib.auth import get_user_model; "
        "print(json.dumps(list(get_user_model().objects.values_list("
        "'username', 'email'))))",
    )
    assert result.returncode == 0, result.stderr
    (account,) = json.loads(result.stdout.strip().splitlines()[-1])
    winner = next(i for i, r in enumerate(responses) if r.status == 302)
    assert account == [
        f"racer{winner}",
        "Same@example.com" if winner % 2 else "same@example.com",
    ]
    assert "Traceback" not in server.log()
