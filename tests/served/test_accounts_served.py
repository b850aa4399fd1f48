"""Accounts against the production server (`make serve`, several processes, the
pass's database), where only a real server shows it: limits that hold under
simultaneous requests in every process, and answers that take the same time
whether or not an address belongs to someone."""

import statistics
import threading
import time

import pytest

from ..conftest import PASSWORD
from ..support.served import serving

LIMIT = 5
SIMULTANEOUS = 20
BARRIER_TIMEOUT = 60  # seconds a request waits for the others before failing
SAMPLES = 30
WARMUP = 3  # pairs of requests not counted
TIMING_TOLERANCE = 0.005  # seconds between the medians
SHARING = 6  # accounts that hold each taken address before it is probed
SHARING_MANY = 30  # the same, in process (a statement count, not a time)


def setup_accounts(server, script: str) -> None:
    result = server.manage("shell", "-v", "0", "-c", SETUP + script)
    assert result.returncode == 0, result.stderr


SETUP = """
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
User = get_user_model()
def confirmed(username, email, verified=True):
    user = User.objects.create_user(username=username, password=PASSWORD)
    EmailAddress.objects.create(user=user, email=email, verified=verified, primary=True)
""".replace("PASSWORD", repr(PASSWORD))


def browser_from(server, address: str):
    """A browser behind the trusted proxy, seen as coming from `address`."""
    browser = server.browser()
    browser.forwarded_for = address
    return browser


def at_once(requests) -> list:
    """Run the `requests` (callables) at the same moment; their answers."""
    barrier = threading.Barrier(len(requests), timeout=BARRIER_TIMEOUT)
    answers = [None] * len(requests)

    def run(index: int) -> None:
        barrier.wait()
        answers[index] = requests[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    return answers


# -- limits: 20 at once cannot pass a limit of 5 ---------------------------------


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    tmp_dir = tmp_path_factory.mktemp("served_limits")
    with serving(
        tmp_dir,
        "limits",
        workers=3,
        DJANGO_TRUSTED_PROXY_COUNT="1",
        DJANGO_LOGIN_FAILURE_LIMIT=str(LIMIT),
        DJANGO_PASSWORD_RESET_LIMIT=str(LIMIT),
    ) as app:
        setup_accounts(app, "confirmed('alice', 'alice@example.com')")
        yield app


def statuses_of(answers) -> dict[int, int]:
    counts: dict[int, int] = {}
    for answer in answers:
        counts[answer.status] = counts.get(answer.status, 0) + 1
    return counts


def prepared(server, path: str, address: str):
    browser = browser_from(server, address)
    assert browser.get(path).status == 200  # the CSRF cookie
    return browser


@pytest.mark.processes
def test_simultaneous_failed_logins_for_one_account(limited):
    """From 20 client addresses at once: exactly LIMIT are checked (400), the
    rest are refused unchecked (429), and then the right password is too."""
    browsers = [
        prepared(limited, "/accounts/login/", f"198.51.100.{n + 1}")
        for n in range(SIMULTANEOUS)
    ]
    answers = at_once(
        [
            lambda b=b: b.post("/accounts/login/", {"login": "alice", "password": "x"})
            for b in browsers
        ]
    )
    assert statuses_of(answers) == {400: LIMIT, 429: SIMULTANEOUS - LIMIT}
    for answer in answers:
        if answer.status == 429:
            assert "Too many failed logins for this account" in answer.text
    late = prepared(limited, "/accounts/login/", "203.0.113.1")
    right = late.post("/accounts/login/", {"login": "ALICE", "password": PASSWORD})
    assert right.status == 429
    assert "Traceback" not in limited.log()


@pytest.mark.processes
def test_simultaneous_failed_logins_from_one_network(limited):
    """20 accounts guessed at once from 20 addresses of one IPv6 /64."""
    browsers = [
        prepared(limited, "/accounts/login/", f"2001:db8:7:7::{n + 1:x}")
        for n in range(SIMULTANEOUS)
    ]
    answers = at_once(
        [
            lambda n=n, b=b: b.post(
                "/accounts/login/", {"login": f"user{n}", "password": "x"}
            )
            for n, b in enumerate(browsers)
        ]
    )
    assert statuses_of(answers) == {400: LIMIT, 429: SIMULTANEOUS - LIMIT}
    other_network = prepared(limited, "/accounts/login/", "2001:db8:7:8::1")
    assert (
        other_network.post("/accounts/login/", {"login": "nobody", "password": "x"})
    ).status == 400


@pytest.mark.processes
def test_simultaneous_reset_requests_for_one_address(limited):
    browsers = [
        prepared(limited, "/accounts/password/reset/", f"192.0.2.{n + 1}")
        for n in range(SIMULTANEOUS)
    ]
    answers = at_once(
        [
            lambda b=b: b.post(
                "/accounts/password/reset/", {"email": "alice@example.com"}
            )
            for b in browsers
        ]
    )
    assert statuses_of(answers) == {302: LIMIT, 429: SIMULTANEOUS - LIMIT}
    for answer in answers:
        if answer.status == 429:
            assert "Too many password-reset requests for this address or from " in (
                answer.text
            )
    assert "Traceback" not in limited.log()


# -- no enumeration by timing -------------------------------------------------


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    """One process, so that requests do not compete with each other; the
    limits off, so that 60 requests can be measured; the test suite's fast
    password hasher (tests.settings), so that what is measured is what differs
    between the two cases, not the noise of a second of PBKDF2 on a busy
    machine."""
    tmp_dir = tmp_path_factory.mktemp("served_timing")
    with serving(
        tmp_dir,
        "timing",
        workers=1,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DJANGO_TRUSTED_PROXY_COUNT="1",
        DJANGO_LOGIN_FAILURE_LIMIT="0",
        DJANGO_PASSWORD_RESET_LIMIT="0",
    ) as app:
        setup_accounts(
            app,
            "".join(
                f"confirmed('dora{n}', {taken_address(n)!r})\n"
                + "".join(
                    f"confirmed('dora{n}x{k}', {taken_address(n)!r}, False)\n"
                    for k in range(SHARING - 1)
                )
                for n in range(-WARMUP, SAMPLES)
            ),
        )
        yield app


def taken_address(n: int) -> str:
    """An address SHARING accounts already hold (one confirmed it; the others
    signed up or changed to it since, unconfirmed for good): a well-known
    address, probed many times. One per sample, so every probe meets the same
    number of accounts: a probe adds one more to the address it used."""
    return f"dora{n}@example.com"


def timed_post(browser, path: str, fields: dict):
    start = time.perf_counter()
    answer = browser.post(path, fields)
    return answer, time.perf_counter() - start


def compare(taken: list, free: list) -> tuple[float, float]:
    """Same status, redirect and cookies for every answer; the two medians."""
    answers = [answer for answer, _ in taken + free]
    assert len({answer.status for answer in answers}) == 1
    assert len({answer.headers.get("Location") for answer in answers}) == 1
    cookie_names = {
        tuple(sorted(c.split("=", 1)[0] for c in a.headers.get_all("Set-Cookie") or []))
        for a in answers
    }
    assert len(cookie_names) == 1
    return (
        statistics.median(seconds for _, seconds in taken),
        statistics.median(seconds for _, seconds in free),
    )


def timing_pairs(send) -> tuple[float, float]:
    """`send(kind, n)` for kind "taken" and "free", interleaved (a slow moment
    of the machine hits both alike), after a few uncounted pairs that warm the
    server up; checks that every answer looks the same; the two medians."""
    for n in range(WARMUP):
        send("taken", -n - 1), send("free", -n - 1)
    taken, free = [], []
    for n in range(SAMPLES):
        taken.append(send("taken", n))
        free.append(send("free", n))
    return compare(taken, free)


def signed_up(server, username: str, address: str):
    browser = prepared(server, "/accounts/signup/", address)
    fields = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    assert browser.post("/accounts/signup/", fields).status == 302
    return browser


@pytest.mark.processes
@pytest.mark.timing
def test_sign_up_takes_as_long_with_a_taken_address(timed):
    def send(kind, n):
        browser = prepared(timed, "/accounts/signup/", f"10.1.{n % 250}.{n // 250 + 1}")
        fields = {
            "username": f"signup-{kind}-{n}",
            "email": taken_address(n) if kind == "taken" else f"f{n}@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        return timed_post(browser, "/accounts/signup/", fields)

    taken_median, free_median = timing_pairs(send)
    assert abs(taken_median - free_median) < TIMING_TOLERANCE, (
        taken_median,
        free_median,
    )


@pytest.mark.processes
@pytest.mark.timing
def test_the_email_page_takes_as_long_with_a_taken_address(timed):
    """Each account changes its address once (just signed up, so no password
    is asked first): to an address another account confirmed, or to a free one."""

    def send(kind, n):
        browser = signed_up(timed, f"email-{kind}-{n}", f"10.3.{n % 250}.1")
        email = taken_address(n) if kind == "taken" else f"e{n}@example.com"
        return timed_post(
            browser, "/accounts/email/", {"email": email, "action_add": ""}
        )

    taken_median, free_median = timing_pairs(send)
    assert abs(taken_median - free_median) < TIMING_TOLERANCE, (
        taken_median,
        free_median,
    )


@pytest.mark.processes
@pytest.mark.timing
def test_reset_takes_as_long_for_an_unknown_address(timed):
    def send(kind, n):
        browser = prepared(timed, "/accounts/password/reset/", f"10.2.{n % 250}.1")
        email = taken_address(n) if kind == "taken" else f"n{n}@example.com"
        return timed_post(browser, "/accounts/password/reset/", {"email": email})

    taken_median, free_median = timing_pairs(send)
    assert abs(taken_median - free_median) < TIMING_TOLERANCE, (
        taken_median,
        free_median,
    )


# -- why the timing holds however many accounts hold an address ------------------


def holders(address: str, count: int, prefix: str) -> None:
    """`count` accounts holding `address`: the first confirmed it."""
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model

    for n in range(count):
        user = get_user_model().objects.create_user(username=f"{prefix}{n}")
        EmailAddress.objects.create(
            user=user, email=address, verified=n == 0, primary=True
        )


@pytest.mark.parametrize("page", ["signup", "email", "reset"])
def test_a_taken_address_costs_the_same_statements_whoever_else_holds_it(
    db, client_for, page
):
    """In process, exactly: a sign-up, an address change or a reset request
    with an address one account holds runs as many SQL statements as with one
    SHARING_MANY accounts hold, so the served medians above cannot drift with
    how often an address was probed."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    def statements(address: str, n: int) -> int:
        if page == "email":
            user = get_user_model().objects.create_user(
                username=f"changer{n}", password=PASSWORD
            )
            client, path = client_for(user), "/accounts/email/"
            fields = {"email": address, "action_add": ""}
        elif page == "signup":
            client, path = Client(), "/accounts/signup/"
            fields = {
                "username": f"newcomer{n}",
                "email": address,
                "password1": PASSWORD,
                "password2": PASSWORD,
            }
        else:
            client, path = Client(), "/accounts/password/reset/"
            fields = {"email": address}
        with CaptureQueriesContext(connection) as queries:
            assert client.post(path, fields).status_code == 302
        return len(queries.captured_queries)

    holders("one@example.com", 1, "one")
    holders("many@example.com", SHARING_MANY, "many")
    assert statements("one@example.com", 1) == statements("many@example.com", 2)
