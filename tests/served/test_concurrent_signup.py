"""Simultaneous sign-ups against the production server (several worker
processes, the current pass's database).

One name in different casings: the form's check alone would let more than one
through; the unique index on LOWER(username) (accounts migration 0001) lets
exactly one, and every other one gets the form's 400, never a 500. One email
address: every sign-up goes ahead (nothing may tell that an address is taken),
each account holding it unconfirmed."""

import json
import threading

import pytest

from ..conftest import PASSWORD
from ..support.served import serving

pytestmark = pytest.mark.processes

RACERS = 8
BARRIER_TIMEOUT = 60  # seconds a racer waits for the others before failing
NAME_REFUSALS = (
    "A user with that username already exists.",
    "That username was just taken: choose another.",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served_signup")
    with serving(tmp_dir, "signup", workers=3) as app:
        yield app


def race(server, fields_of) -> list:
    """RACERS sign-ups at once, each from its own client address; the answers."""
    browsers = [server.browser() for _ in range(RACERS)]
    for index, browser in enumerate(browsers):
        browser.forwarded_for = f"192.0.2.{index + 1}"
        assert browser.get("/accounts/signup/").status == 200  # the CSRF cookie
    barrier = threading.Barrier(RACERS, timeout=BARRIER_TIMEOUT)
    responses = [None] * RACERS

    def sign_up(index: int) -> None:
        fields = {"password1": PASSWORD, "password2": PASSWORD} | fields_of(index)
        barrier.wait()
        responses[index] = browsers[index].post("/accounts/signup/", fields)

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return responses


def stored(server, query: str) -> list:
    result = server.manage(
        "shell",
        "-v",
        "0",
        "-c",
        "import json; from django.contrib.auth import get_user_model; "
        "from allauth.account.models import EmailAddress; "
        f"print(json.dumps(list({query})))",
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("spellings", "same_name"),
    [
        (["Alice", "alice", "ALICE", "aLiCe"], "username__iexact='alice'"),
        # Spellings that LOWER(username) does not merge on SQLite: the unique
        # key of the folded name (accounts migration 0004) lets one through.
        (["Émile", "émile", "ÉMILE", "éMILE"], "username_key__key='émile'"),
    ],
    ids=["case", "unicode"],
)
def test_simultaneous_sign_ups_of_one_name_in_any_spelling_make_one_account(
    server, spellings, same_name
):
    responses = race(server, lambda i: {"username": spellings[i % len(spellings)]})
    statuses = sorted(response.status for response in responses)
    assert statuses == [302] + [400] * (RACERS - 1)
    for response in responses:
        if response.status == 400:
            assert any(refusal in response.text for refusal in NAME_REFUSALS)
    winner = next(i for i, r in enumerate(responses) if r.status == 302)
    names = stored(
        server,
        f"get_user_model().objects.filter({same_name})"
        ".values_list('username', flat=True)",
    )
    assert names == [spellings[winner % len(spellings)]]
    assert "Traceback" not in server.log()


def test_simultaneous_sign_ups_with_one_address_all_go_ahead(server):
    responses = race(
        server,
        lambda i: {
            "username": f"racer{i}",
            "email": "Same@Example.com" if i % 2 else "same@example.COM",
        },
    )
    assert [response.status for response in responses] == [302] * RACERS
    addresses = stored(
        server,
        "EmailAddress.objects.order_by('user__username')"
        ".values_list('user__username', 'email', 'verified')",
    )
    assert addresses == [[f"racer{i}", "same@example.com", False] for i in range(8)]
    assert "Traceback" not in server.log()
