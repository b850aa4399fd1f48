"""Your signed-in browsers (allauth.usersessions, accounts.user_sessions): the
account page lists each browser that still logs you in (when, from where, which
is this one), and signs out one of them, or all but this one; a browser signed
out loses its live streams at once, as after a logout."""

import asyncio
import re

import pytest
from allauth.usersessions.models import UserSession
from django.test import Client

from games.live.hub import KEEPALIVE_SECONDS, hub

from ..conftest import PASSWORD
from ..support.account_client import NEW_PASSWORD, logged_in_as
from ..support.asgi import BOUND, Stream, in_thread, move, run, sessionid

ACCOUNT = "/accounts/password/change/"
END = "/accounts/sessions/end/"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"
PHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_5 like Mac OS X) Safari/604.1"


def browser(username: str, address: str, agent: str, **extra) -> Client:
    """A browser that logged in through the login form (allauth records it)."""
    client = Client(HTTP_USER_AGENT=agent)
    response = client.post(
        "/accounts/login/",
        {"login": username, "password": PASSWORD},
        REMOTE_ADDR=address,
        **extra,
    )
    assert response.status_code == 302
    return client


def listed(client) -> list[str]:
    """The account page's browsers, as text, in their order."""
    page = client.get(ACCOUNT)
    assert page.status_code == 200
    section = page.text.split('id="browsers-title"', 1)[1].split("</section>", 1)[0]
    items = re.findall(r"<li>(.*?)</li>", section, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", item).split()) for item in items]


def session_id(client) -> int:
    return UserSession.objects.get(session_key=sessionid(client)).pk


@pytest.fixture
def laptop(alice):
    return browser("alice", "198.51.100.1", FIREFOX)


@pytest.fixture
def phone(alice):
    return browser("alice", "2001:db8::7", PHONE)


def test_the_account_page_lists_each_browser(laptop, phone, bob):
    browser("bob", "203.0.113.50", FIREFOX)  # someone else's: not listed
    rows = listed(laptop)
    assert len(rows) == 2
    assert rows[0].startswith("This browser · signed in ")
    assert "from 198.51.100.1 " + FIREFOX in rows[0]
    assert "Sign out this browser (198.51.100.1, signed in " in rows[0]
    assert "This browser" not in rows[1]
    assert "from 2001:db8::7 " + PHONE in rows[1]
    assert "UTC" in rows[0]
    page = laptop.get(ACCOUNT).text
    assert "Sign out all other browsers" in page


def test_this_browser_comes_first_then_the_newest(laptop, phone):
    tablet = browser("alice", "198.51.100.3", PHONE)
    addresses = [
        re.search(r"from (\S+) ", row)[1] for row in listed(laptop) + listed(tablet)
    ]
    assert addresses == [
        "198.51.100.1",  # laptop's list: this one, though the first signed in
        "198.51.100.3",
        "2001:db8::7",
        "198.51.100.3",  # tablet's list: this one, then newest first
        "2001:db8::7",
        "198.51.100.1",
    ]


def test_the_address_is_the_one_the_site_trusts(alice, settings):
    """Behind one proxy, the address the proxy saw, not what the client claims
    (accounts.client)."""
    settings.TRUSTED_PROXY_COUNT = 1
    client = browser(
        "alice",
        "10.0.0.2",
        FIREFOX,
        HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.23",
    )
    assert UserSession.objects.get(session_key=sessionid(client)).ip == (
        "198.51.100.23"
    )


def test_the_list_costs_the_same_for_many_browsers(
    alice, laptop, django_assert_num_queries
):
    def queries_for_the_page() -> int:
        with django_assert_num_queries(6) as context:
            assert laptop.get(ACCOUNT).status_code == 200
        return len(context.captured_queries)

    # The user, their second factors, whom they blocked, the your-turn choice,
    # the recorded browsers and their sessions.
    assert queries_for_the_page() == 6
    for number in range(6):
        browser("alice", f"198.51.100.{10 + number}", PHONE)
    assert queries_for_the_page() == 6
    assert len(listed(laptop)) == 7


def test_signing_out_another_browser(laptop, phone):
    response = laptop.post(END, {"session": session_id(phone)})
    assert response.status_code == 302
    assert response["Location"] == ACCOUNT
    assert "Signed out of 1 other browser." in laptop.get(ACCOUNT).text
    assert logged_in_as(phone) is None
    assert logged_in_as(laptop) == "alice"
    assert len(listed(laptop)) == 1


def test_signing_out_every_other_browser(laptop, phone, bob):
    tablet = browser("alice", "198.51.100.3", PHONE)
    bobs = browser("bob", "198.51.100.4", FIREFOX)
    response = laptop.post(END, {"others": "1"})
    assert response.status_code == 302
    assert "Signed out of 2 other browsers." in laptop.get(ACCOUNT).text
    assert [logged_in_as(c) for c in (laptop, phone, tablet, bobs)] == [
        "alice",
        None,
        None,
        "bob",
    ]
    assert UserSession.objects.filter(user__username="alice").count() == 1


def test_signing_out_this_browser(laptop, phone):
    response = laptop.post(END, {"session": session_id(laptop)})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert logged_in_as(laptop) is None
    assert logged_in_as(phone) == "alice"


def test_a_browser_ended_by_a_password_change_is_not_listed(laptop, phone):
    changed = laptop.post(
        ACCOUNT,
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302
    assert logged_in_as(phone) is None
    rows = listed(laptop)
    assert len(rows) == 1
    assert rows[0].startswith("This browser")
    # Their rows are left until the next login; signing them out counts none.
    assert laptop.post(END, {"others": "1"}).status_code == 302
    assert "Signed out of 0 other browsers." in laptop.get(ACCOUNT).text
    assert UserSession.objects.count() == 1


def test_deleting_a_browser_in_the_admin_signs_it_out(
    laptop, phone, client_for, make_user
):
    staff = client_for(make_user("root", is_staff=True, is_superuser=True))
    path = f"/admin/usersessions/usersession/{session_id(phone)}/"
    assert staff.get(path + "change/").status_code == 200
    assert staff.post(path + "change/", {"ip": "6.6.6.6"}).status_code == 403
    assert staff.get("/admin/usersessions/usersession/add/").status_code == 403
    response = staff.post(path + "delete/", {"post": "yes"})
    assert response.status_code == 302
    assert logged_in_as(phone) is None
    assert logged_in_as(laptop) == "alice"
    assert UserSession.objects.get().session_key == sessionid(laptop)
    laptop_id = session_id(laptop)
    response = staff.post(
        "/admin/usersessions/usersession/",
        {"action": "delete_selected", "_selected_action": [laptop_id], "post": "yes"},
    )
    assert response.status_code == 302
    assert logged_in_as(laptop) is None
    assert not UserSession.objects.exists()


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({}, 400, "Choose one browser to sign out, or all the others."),
        (
            {"session": "1", "others": "1"},
            400,
            "Choose one browser to sign out, or all the others.",
        ),
        ({"session": "x"}, 400, "That is not a browser."),
        ({"session": "-4"}, 400, "That is not a browser."),
        ({"session": "9" * 30}, 400, "That is not a browser."),
        ({"session": "999999"}, 404, "That browser is not signed in to your account."),
    ],
)
def test_a_refusal_signs_nobody_out(laptop, phone, data, status, message):
    response = laptop.post(END, data)
    assert response.status_code == status
    assert message in response.text
    assert [logged_in_as(c) for c in (laptop, phone)] == ["alice", "alice"]


def test_another_accounts_browser_is_as_if_it_did_not_exist(laptop, bob):
    bobs = browser("bob", "198.51.100.4", FIREFOX)
    response = laptop.post(END, {"session": session_id(bobs)})
    assert response.status_code == 404
    assert "That browser is not signed in to your account." in response.text
    assert logged_in_as(bobs) == "bob"


def test_signing_out_needs_a_login_and_a_post(laptop, db):
    response = Client().post(END, {"others": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={END}"
    assert laptop.get(END).status_code == 405


# -- live streams ------------------------------------------------------------


async def _opened(path: str, cookie: str) -> Stream:
    stream = Stream(path, cookie=cookie)
    status, _, _ = await stream.response()
    assert status == 200
    await asyncio.wait_for(hub.listening.wait(), BOUND)
    return stream


async def _ended(stream: Stream) -> dict:
    await asyncio.wait_for(asyncio.shield(stream.task), KEEPALIVE_SECONDS)
    last = None
    while not stream.messages.empty():
        last = stream.messages.get_nowait()
    return last


@pytest.mark.usefixtures("fresh_hub")
@pytest.mark.django_db(transaction=True)
def test_a_browser_signed_out_loses_its_streams_at_once(alice, bob, game):
    laptop = browser("bob", "198.51.100.1", FIREFOX)
    phone = browser("bob", "198.51.100.2", PHONE)
    path = f"/games/{game.pk}/events/?v={game.version}"
    phone_id = session_id(phone)

    async def scenario():
        gone = [
            await _opened(path, sessionid(phone)),
            await _opened("/lobby/events/", sessionid(phone)),
        ]
        kept = await _opened(path, sessionid(laptop))
        response = await in_thread(laptop.post, END, {"session": phone_id})
        endings = [await _ended(stream) for stream in gone]
        await in_thread(move, game, alice, 1, 1)
        while (event := await kept.event()).get("event") == "ping":
            pass
        await kept.close()
        return response.status_code, endings, event

    status, endings, event = run(scenario())
    assert status == 302
    assert endings == [{"type": "http.response.body", "body": b""}] * 2
    version = str(game.version + 1)
    assert event == {"id": version, "data": version}


def test_sessions_signed_in_before_the_list_are_recorded(alice, bob, client_for):
    """accounts migration 0003: a session from before (force_login records
    none) is listed, and can be signed out, with its address not recorded."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("accounts.migrations.0005_record_signed_in_sessions")
    before = client_for(alice)
    bobs = client_for(bob)
    Client().get("/")  # a visitor's session (none: nothing stored), not recorded
    laptop = browser("alice", "198.51.100.1", FIREFOX)  # recorded at its login
    migration.record_existing_sessions(apps, None)
    migration.record_existing_sessions(apps, None)  # twice: nothing more
    assert sorted(UserSession.objects.values_list("user__username", "ip")) == [
        ("alice", "0.0.0.0"),
        ("alice", "198.51.100.1"),
        ("bob", "0.0.0.0"),
    ]
    rows = listed(laptop)
    assert "from an address not recorded" in rows[1]
    assert laptop.post(END, {"others": "1"}).status_code == 302
    assert [logged_in_as(c) for c in (laptop, before, bobs)] == ["alice", None, "bob"]
