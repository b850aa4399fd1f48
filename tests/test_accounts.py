"""Accounts through HTTP (allauth's views as the accounts app configures them):
sign-up, one name per person, login, password change and reset, confirmed
email addresses, the limits. Closing an account: test_accounts_close.py;
timing and simultaneous requests against the served app:
test_accounts_served.py."""

import re
from datetime import timedelta
from types import SimpleNamespace

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone

from games import services

from .conftest import PASSWORD
from .support.account_client import logged_in_as, login, mailed_link, outbox_to, signup

NEW_PASSWORD = "another-long-password-77"
WRONG_PASSWORD = "That is not your current password."
LOGIN_REFUSED = "The username and/or password you specified are not correct."
NAME_TAKEN = "A user with that username already exists."
PAUSED = "Too many failed logins for this account or from your network"
REQUESTS_PAUSED = "Too many requests for this account or from your network"
LINK_INVALID = "This password-reset link has expired, has already been used"
User = get_user_model()


def confirmed(user, email: str) -> EmailAddress:
    return EmailAddress.objects.create(
        user=user, email=email, verified=True, primary=True
    )


def addresses() -> set[tuple[str, str, bool]]:
    return set(EmailAddress.objects.values_list("user__username", "email", "verified"))


# -- sign-up ----------------------------------------------------------------------


def test_signup_logs_in_and_stores_the_address_unconfirmed(db):
    client = Client()
    response = signup("dora", "Dora@Example.COM", client=client)
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert logged_in_as(client) == "dora"
    assert addresses() == {("dora", "dora@example.com", False)}
    (message,) = mail.outbox
    assert message.to == ["dora@example.com"]
    assert message.subject == "[tictactoe] Please Confirm Your Email Address"
    assert mailed_link(message).startswith("/accounts/confirm-email/")


def test_the_address_is_optional(db):
    assert signup("erin").status_code == 302
    assert signup("fay", "").status_code == 302
    assert addresses() == set()
    assert mail.outbox == []


def test_signup_page(client, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/accounts/signup/")
    assert response.status_code == 200
    assert "Email address (optional)" in response.text
    for field in ("username", "email", "password1", "password2"):
        assert f'name="{field}"' in response.text


def test_a_taken_address_signs_up_the_same_and_mails_its_owner(make_user):
    """Nothing in the answer says the address is taken: the same redirect,
    cookies and messages; the new account holds the address unconfirmed, as
    with a free one; the one mail goes to the address either way, to its owner a
    notice instead of a link."""
    confirmed(make_user("dora"), "dora@example.com")
    taken_client, free_client = Client(), Client()
    taken = signup("erin", "DORA@example.com", client=taken_client)
    free = signup("fay", "fay@example.com", client=free_client)
    assert taken.status_code == free.status_code == 302
    assert taken["Location"] == free["Location"] == "/"
    assert taken.cookies.keys() == free.cookies.keys()
    # What the new account sees of its address is the same too.
    assert _without_names(taken_client.get("/accounts/email/").text) == (
        _without_names(free_client.get("/accounts/email/").text)
    )
    assert addresses() == {
        ("dora", "dora@example.com", True),
        ("erin", "dora@example.com", False),
        ("fay", "fay@example.com", False),
    }
    (notice,) = outbox_to("dora@example.com")
    assert notice.subject == "[tictactoe] Someone tried to use your email address"
    assert "Someone tried to use this email address" in notice.body
    assert "/accounts/confirm-email/" not in notice.body
    (link,) = outbox_to("fay@example.com")
    assert "/accounts/confirm-email/" in link.body


def _without_names(page: str) -> str:
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    return re.sub(r"dora@example\.com|fay@example\.com|erin|fay", "NAME", page)


def test_an_unconfirmed_address_of_another_account_gets_a_link(make_user):
    """Unconfirmed, an address is nobody's yet: both accounts get a link, and
    the first to confirm keeps it (confirmed addresses are unique)."""
    dora = make_user("dora")
    EmailAddress.objects.create(user=dora, email="dora@example.com", primary=True)
    assert signup("erin", "dora@example.com").status_code == 302
    (message,) = mail.outbox
    erin_link = mailed_link(message)
    dora_address = EmailAddress.objects.get(user=dora)
    dora_address.verified = True
    dora_address.save()
    response = Client().post(erin_link)
    assert response.status_code == 302
    assert addresses() == {
        ("dora", "dora@example.com", True),
        ("erin", "dora@example.com", False),
    }


def test_signup_refuses_a_taken_username_in_any_case(make_user):
    make_user("Alice")
    for name in ("Alice", "alice", "ALICE"):
        response = signup(name)
        assert response.status_code == 400
        assert NAME_TAKEN in response.text
    assert list(User.objects.values_list("username", flat=True)) == ["Alice"]


def test_signup_refuses_a_malformed_address_and_a_weak_password(db):
    response = Client().post(
        "/accounts/signup/",
        {
            "username": "erin",
            "email": "not an address",
            "password1": "123",
            "password2": "123",
        },
    )
    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert "This password is too short." in response.text
    assert not User.objects.exists()


def test_the_database_refuses_a_username_in_another_case(make_user):
    """The unique index on LOWER(username) (accounts migration 0001): two
    sign-ups that both pass the form's check cannot both be stored."""
    make_user("Alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        make_user("aLICE")
    assert User.objects.count() == 1


def test_a_sign_up_that_loses_the_race_gets_the_form_error(make_user, monkeypatch):
    """The form saw the name free; by the time of the write another sign-up has
    it: the answer is a 400 with the form, nobody is logged in."""
    from allauth.account.adapter import DefaultAccountAdapter

    make_user("alice")
    monkeypatch.setattr(DefaultAccountAdapter, "clean_username", lambda self, n: n)
    client = Client()
    response = signup("ALICE", "a@example.com", client=client)
    assert response.status_code == 400
    assert "That username was just taken: choose another." in response.text
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]
    assert addresses() == set()
    assert logged_in_as(client) is None


def test_the_database_refuses_two_confirmed_owners_of_an_address(make_user):
    confirmed(make_user("dora"), "dora@example.com")
    erin = make_user("erin")
    EmailAddress.objects.create(user=erin, email="dora@example.com")
    with pytest.raises(IntegrityError), transaction.atomic():
        EmailAddress.objects.create(user=erin, email="Dora@Example.com", verified=True)


# -- login ------------------------------------------------------------------------


def test_login_by_either_casing_finds_the_one_account(make_user):
    make_user("Alice")
    for name in ("Alice", "alice", "ALICE"):
        assert logged_in_as(login(name)) == "Alice"


def test_a_wrong_password_is_a_400(make_user):
    make_user("alice")
    response = Client().post("/accounts/login/", {"login": "alice", "password": "nope"})
    assert response.status_code == 400
    assert LOGIN_REFUSED in response.text
    assert response.wsgi_request.user.is_anonymous


def test_login_page_links_reset_and_signup(client, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert '<a href="/accounts/password/reset/">Forgot your password?</a>' in (
        response.text
    )
    assert '<a href="/accounts/signup/">Create an account</a>' in response.text


# -- limits -----------------------------------------------------------------------


def fail_login(username: str, address: str):
    return Client().post(
        "/accounts/login/",
        {"login": username, "password": "wrong"},
        REMOTE_ADDR=address,
    )


def test_failed_logins_for_one_username_pause_its_logins(settings, make_user):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        assert fail_login("alice", f"192.0.2.{n}").status_code == 400
    response = fail_login("ALICE", "192.0.2.100")
    assert response.status_code == 429
    assert PAUSED in response.text
    assert f"paused for {settings.LOGIN_COOLOFF_MINUTES} minutes" in response.text
    # The right password too, from anywhere; other accounts are not affected.
    assert logged_in_as(login("alice", address="192.0.2.101")) is None
    make_user("bob")
    assert logged_in_as(login("bob", address="192.0.2.102")) == "bob"


def test_failed_logins_from_one_network_pause_its_logins(settings, make_user):
    """Per client address, IPv6 counted per /64: the addresses of one /64 are
    one client; the next /64 is another."""
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        assert fail_login(f"user{n}", f"2001:db8:0:1::{n + 1}").status_code == 400
    assert fail_login("alice", "2001:db8:0:1:ffff::9").status_code == 429
    assert logged_in_as(login("alice", address="2001:db8:0:1::77")) is None
    assert logged_in_as(login("alice", address="2001:db8:0:2::1")) == "alice"


def test_a_success_does_not_clear_the_count(settings, make_user):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT - 1):
        fail_login("alice", f"192.0.2.{n}")
    assert logged_in_as(login("alice", address="192.0.2.50")) == "alice"
    fail_login("alice", "192.0.2.51")
    assert fail_login("alice", "192.0.2.52").status_code == 429


def test_the_pause_ends_after_the_cooloff(settings, make_user, monkeypatch):
    make_user("alice")
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        fail_login("alice", f"192.0.2.{n}")
    assert logged_in_as(login("alice", address="192.0.2.60")) is None
    later = timezone.now() + timedelta(
        minutes=settings.LOGIN_COOLOFF_MINUTES, seconds=1
    )
    monkeypatch.setattr("time.time", lambda: later.timestamp())
    assert logged_in_as(login("alice", address="192.0.2.61")) == "alice"


def test_the_counts_are_shared_through_the_database(settings, make_user):
    """Every server process and host reads the same counts: they are rows of
    the cache table, not process memory."""
    make_user("alice")
    fail_login("alice", "192.0.2.1")
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM accounts_rate_limits")
        assert cursor.fetchone()[0] >= 2  # per username and per client address


def test_confirmation_mails_for_one_address_are_limited(settings, db):
    """Past the limit, sign-ups with the address still go ahead and answer the
    same; no more mail goes to it (the links already sent still work)."""
    for n in range(settings.PASSWORD_RESET_LIMIT + 2):
        response = signup(f"user{n}", "dora@example.com", REMOTE_ADDR=f"192.0.2.{n}")
        assert response.status_code == 302
    assert len(outbox_to("dora@example.com")) == settings.PASSWORD_RESET_LIMIT


def test_confirmation_mails_from_one_client_are_limited(settings, db):
    for n in range(settings.PASSWORD_RESET_LIMIT + 2):
        assert signup(f"user{n}", f"user{n}@example.com").status_code == 302
    assert len(mail.outbox) == settings.PASSWORD_RESET_LIMIT


def test_wrong_current_passwords_count_as_failed_logins(settings, client_for, alice):
    """A stolen session cannot guess the password without limit: the checks of
    the password change, re-authentication and closing count like logins."""
    client = client_for(alice)
    checks = [
        (
            "/accounts/password/change/",
            {"oldpassword": "x", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        ),
        ("/accounts/reauthenticate/", {"password": "x"}),
        ("/accounts/close/", {"password": "x"}),
    ]
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        path, data = checks[n % len(checks)]
        response = client.post(path, data, REMOTE_ADDR=f"192.0.2.{n}")
        assert response.status_code == 400, path
    response = client.post("/accounts/close/", {"password": PASSWORD})
    assert response.status_code == 429
    assert PAUSED in response.text
    alice.refresh_from_db()
    assert alice.is_active
    assert logged_in_as(login("alice", address="192.0.2.200")) is None


# -- password change --------------------------------------------------------------


def change_password(client, old=PASSWORD, new=NEW_PASSWORD):
    return client.post(
        "/accounts/password/change/",
        {"oldpassword": old, "password1": new, "password2": new},
    )


def test_password_change_needs_a_login(client, db):
    response = client.get("/accounts/password/change/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/password/change/"


def test_password_change_page(client_for, alice, django_assert_num_queries):
    client = client_for(alice)
    # The user, whom they blocked, their your-turn email choice.
    with django_assert_num_queries(3):
        response = client.get("/accounts/password/change/")
    assert response.status_code == 200
    assert '<a href="/accounts/password/change/">Account</a>' in response.text
    assert 'aria-current="page">Change password</a>' in response.text
    assert '<h2 id="blocked-heading">People you blocked</h2>' in response.text


def test_the_account_page_lists_whom_you_blocked(client_for, alice, bob):
    services.block_player(blocker=alice, blocked=bob)
    response = client_for(alice).get("/accounts/password/change/")
    assert '<a href="/players/bob/">bob</a>' in response.text
    assert '<button type="submit" class="button small">Unblock bob</button>' in (
        response.text
    )


def test_password_change_refuses_a_wrong_current_password(client_for, alice):
    response = change_password(client_for(alice), old="not-it")
    assert response.status_code == 400
    assert WRONG_PASSWORD in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_applies_the_validators(client_for, alice):
    response = change_password(client_for(alice), new="123")
    assert response.status_code == 400
    assert "This password is too short." in response.text
    assert "This password is too common." in response.text
    assert "This password is entirely numeric." in response.text
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_password_change_keeps_this_session_and_ends_the_others(alice):
    here, elsewhere = login("alice"), login("alice")
    assert logged_in_as(elsewhere) == "alice"
    response = change_password(here)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/change/"
    assert "Password successfully changed." in here.get(response["Location"]).text
    assert logged_in_as(here) == "alice"
    assert logged_in_as(elsewhere) is None
    assert logged_in_as(login("alice", NEW_PASSWORD)) == "alice"
    assert logged_in_as(login("alice", PASSWORD)) is None


# -- email address ----------------------------------------------------------------


def test_email_page_needs_a_login(client, db):
    response = client.get("/accounts/email/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/email/"


def test_email_page_shows_the_address(client_for, make_user, django_assert_num_queries):
    dora = make_user("dora", email="dora@example.com")
    confirmed(dora, "dora@example.com")
    client = client_for(dora)
    # The user; allauth's view: user.email against the addresses, then the
    # addresses, the current one and the pending one.
    with django_assert_num_queries(5):
        response = client.get("/accounts/email/")
    assert response.status_code == 200
    assert (
        "Your account's address is <strong>dora@example.com</strong> (confirmed)"
        in response.text
    )


def reauthenticated(client, password=PASSWORD):
    response = client.post("/accounts/reauthenticate/", {"password": password})
    assert response.status_code == 302, response.status_code
    return client


def test_changing_the_address_asks_for_the_password_first(client_for, alice):
    client = client_for(alice)
    response = client.post(
        "/accounts/email/", {"email": "alice@example.org", "action_add": ""}
    )
    assert response.status_code == 302
    assert (
        response["Location"] == "/accounts/reauthenticate/?next=%2Faccounts%2Femail%2F"
    )
    assert addresses() == set()
    wrong = client.post("/accounts/reauthenticate/", {"password": "nope"})
    assert wrong.status_code == 400
    assert addresses() == set()
    assert mail.outbox == []


def test_the_password_is_the_only_way_to_confirm_it_is_you(client_for, alice):
    """Regression: with an address, allauth offered a code by email too, on a
    route this site does not have (a 500)."""
    confirmed(alice, "alice@example.com")
    response = client_for(alice).get("/accounts/reauthenticate/")
    assert response.status_code == 200
    assert 'name="password"' in response.text
    assert mail.outbox == []


def test_adding_confirming_changing_and_removing_the_address(client_for, alice):
    client = reauthenticated(client_for(alice))
    response = client.post(
        "/accounts/email/", {"email": "Alice@Example.org", "action_add": ""}
    )
    assert response.status_code == 302
    assert addresses() == {("alice", "alice@example.org", False)}
    (message,) = mail.outbox
    link = mailed_link(message)
    assert client.get(link).status_code == 200
    assert client.post(link).status_code == 302
    assert addresses() == {("alice", "alice@example.org", True)}
    # A change: the new address waits for its confirmation, the old one stays.
    client.post("/accounts/email/", {"email": "new@example.org", "action_add": ""})
    assert addresses() == {
        ("alice", "alice@example.org", True),
        ("alice", "new@example.org", False),
    }
    assert client.post(mailed_link(mail.outbox[-1])).status_code == 302
    assert addresses() == {("alice", "new@example.org", True)}
    alice.refresh_from_db()
    assert alice.email == "new@example.org"
    client.post("/accounts/email/", {"email": "new@example.org", "action_remove": ""})
    assert addresses() == set()
    assert logged_in_as(client) == "alice"


def test_a_broken_confirmation_link_is_a_readable_400(client_for, alice):
    response = client_for(alice).get("/accounts/confirm-email/MQ:nonsense/")
    assert response.status_code == 400
    assert "This confirmation link has expired or is not valid." in response.text


def test_changing_to_a_confirmed_address_of_another_account(client_for, alice, bob):
    """The same answer as for a free address; its owner gets the notice, and
    the address can never be confirmed for alice."""
    confirmed(bob, "bob@example.com")
    client = reauthenticated(client_for(alice))
    response = client.post(
        "/accounts/email/", {"email": "BOB@example.com", "action_add": ""}
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/email/"
    (notice,) = mail.outbox
    assert notice.to == ["bob@example.com"]
    assert "Someone tried to use this email address" in notice.body
    assert addresses() == {
        ("bob", "bob@example.com", True),
        ("alice", "bob@example.com", False),
    }
    # Asking again for the link sends bob another notice, still no link.
    client.post("/accounts/email/", {"email": "bob@example.com", "action_send": ""})
    assert "/accounts/confirm-email/" not in mail.outbox[-1].body


# -- password reset ---------------------------------------------------------------


@pytest.fixture
def dora(make_user):
    user = make_user("dora")
    confirmed(user, "dora@example.com")
    return user


def ask_for_reset(email: str, address="198.51.100.7", client=None):
    return (client or Client()).post(
        "/accounts/password/reset/", {"email": email}, REMOTE_ADDR=address
    )


def test_reset_page_is_the_same_for_any_address(dora, make_user):
    """A confirmed address gets a link; an unknown or unconfirmed one a mail
    that says no account has it: the same answer, one mail either way."""
    unconfirmed = make_user("erin")
    EmailAddress.objects.create(user=unconfirmed, email="erin@example.com")
    answers = [
        ask_for_reset(a)
        for a in ("DORA@example.com", "nobody@example.com", "erin@example.com")
    ]
    assert {answer.status_code for answer in answers} == {302}
    assert {answer["Location"] for answer in answers} == {
        "/accounts/password/reset/done/"
    }
    assert len({tuple(answer.cookies.keys()) for answer in answers}) == 1
    assert [message.to for message in mail.outbox] == [
        ["dora@example.com"],
        ["nobody@example.com"],
        ["erin@example.com"],
    ]
    assert "/accounts/password/reset/key/" in mail.outbox[0].body
    assert "/accounts/password/reset/key/" not in mail.outbox[1].body
    assert "/accounts/password/reset/key/" not in mail.outbox[2].body


def test_reset_by_email_end_to_end(dora):
    elsewhere = login("dora")
    ask_for_reset("dora@example.com")
    client = Client()
    link = mailed_link(mail.outbox[0])
    form = client.get(link, follow=True)
    assert form.status_code == 200
    assert "Choose a new password" in form.text
    response = client.post(
        form.redirect_chain[-1][0],
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/key/done/"
    assert logged_in_as(elsewhere) is None
    assert logged_in_as(login("dora", NEW_PASSWORD)) == "dora"
    # The link works once.
    again = Client().get(link, follow=True)
    assert again.status_code == 400
    assert LINK_INVALID in again.text


def test_a_reset_link_expires(dora, settings, monkeypatch):
    ask_for_reset("dora@example.com")
    link = mailed_link(mail.outbox[0])
    later = timezone.now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1)
    monkeypatch.setattr(
        "django.contrib.auth.tokens.PasswordResetTokenGenerator._now",
        lambda self: later.replace(tzinfo=None),
    )
    response = Client().get(link, follow=True)
    assert response.status_code == 400
    assert LINK_INVALID in response.text


@pytest.mark.parametrize(
    "link",
    [
        "/accounts/password/reset/key/1-nonsense/",
        "/accounts/password/reset/key/zz-1-2/",
    ],
)
def test_a_mangled_reset_link_is_a_readable_400(dora, link):
    response = Client().get(link)
    assert response.status_code == 400
    assert LINK_INVALID in response.text


def test_reset_requests_for_one_address_are_limited(dora, settings):
    for n in range(settings.PASSWORD_RESET_LIMIT):
        assert (
            ask_for_reset("dora@example.com", address=f"192.0.2.{n}").status_code == 302
        )
    response = ask_for_reset("DORA@example.com", address="192.0.2.99")
    assert response.status_code == 429
    assert REQUESTS_PAUSED in response.text
    assert len(mail.outbox) == settings.PASSWORD_RESET_LIMIT


def test_reset_requests_from_one_client_are_limited(dora, settings):
    for n in range(settings.PASSWORD_RESET_LIMIT):
        assert ask_for_reset(f"user{n}@example.com").status_code == 302
    assert ask_for_reset("dora@example.com").status_code == 429
    assert ask_for_reset("dora@example.com", address="192.0.2.1").status_code == 302


def test_a_malformed_reset_request_is_a_400(db):
    response = ask_for_reset("not an address")
    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert mail.outbox == []


# -- the migration ----------------------------------------------------------------


def schema_editor():
    """What the migration's functions use of a schema editor (a real one cannot
    run inside the test's transaction on SQLite)."""

    def execute(sql):
        with connection.cursor() as cursor:
            cursor.execute(sql)

    return SimpleNamespace(execute=execute, quote_name=connection.ops.quote_name)


def test_the_migration_reports_names_that_differ_only_in_case(db):
    """Existing case-duplicates stop the migration with their list; nothing is
    merged."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("accounts.migrations.0001_initial")
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX accounts_username_unique_ci")
    User.objects.create(username="Alice")
    User.objects.create(username="alice")
    User.objects.create(username="bob")
    with pytest.raises(RuntimeError, match="differ only in case: Alice, alice\\."):
        migration.add_unique_username_index(apps, schema_editor())
    assert User.objects.count() == 3


def test_the_migration_copies_addresses_unconfirmed(db):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("accounts.migrations.0001_initial")
    User.objects.create(username="dora", email="Dora@Example.com")
    User.objects.create(username="erin", email="")
    migration.copy_email_addresses(apps, schema_editor())
    assert addresses() == {("dora", "dora@example.com", False)}
    assert EmailAddress.objects.get().primary
