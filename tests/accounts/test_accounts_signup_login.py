"""Sign-up and login through HTTP (allauth's views as the accounts app configures
them): the address optional and unconfirmed until its link is followed, a taken
address answering as a free one does, one name per person in any case (the
form, the database's index and the migration that made it), login by either
casing. The other account modules: tests/test_accounts_*.py.
"""

import re
from types import SimpleNamespace

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import IntegrityError, connection, transaction
from django.test import Client

from accounts.models import UsernameKey

from ..support.account_client import (
    addresses,
    confirmed,
    logged_in_as,
    login,
    mailed_link,
    outbox_to,
    signup,
)

LOGIN_REFUSED = "The username and/or password you specified are not correct."
NAME_TAKEN = "A user with that username already exists."
User = get_user_model()


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
    assert message.subject == "[tictactoe] Confirm your email address"
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
    from accounts.adapter import AccountAdapter

    make_user("alice")
    monkeypatch.setattr(AccountAdapter, "clean_username", lambda self, n: n)
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
    for name in ("Alice", "alice", "bob"):
        User.objects.create(username=name)
        UsernameKey.objects.all().delete()  # as before migration 0003
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
