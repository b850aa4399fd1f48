"""One name per person after Unicode case folding and compatibility
normalisation (accounts.usernames): `Émile` and `émile`, `ﬁsh` and `fish`, the
Kelvin sign and `K` are one name, on both databases. Sign-up, the admin and the
database refuse the second; login by any spelling of the name finds its one
account; the migration that stored the keys reports names that would collide
and merges nothing."""

import re
from importlib import import_module

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.test import Client

from accounts.models import UsernameKey
from accounts.usernames import username_key

from ..conftest import PASSWORD
from ..support.account_client import logged_in_as, login, signup

User = get_user_model()
NAME_TAKEN = "A user with that username already exists."
TOO_LONG = "That username is too long."

# (stored, another spelling of the same name)
SAME_NAMES = [
    ("Émile", "émile"),
    ("émile", "ÉMILE"),
    ("E\u0301mile", "Émile"),  # É decomposed: E and a combining acute accent
    ("fish", "\ufb01sh"),  # the "ﬁ" ligature
    ("\ufb01sh", "FISH"),
    ("Kelvin", "\u212aelvin"),  # the Kelvin sign
    ("straße", "STRASSE"),
    ("Ǆemal", "džemal"),  # a digraph, and its letters
]


def names() -> list[str]:
    return sorted(User.objects.values_list("username", flat=True))


def raw_user(username: str):
    """A user saved as given (create_user would NFKC-normalise the name)."""
    return User.objects.create(username=username)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("alice", "alice"),
        ("Émile", "émile"),
        ("E\u0301MILE", "émile"),
        ("\ufb01sh", "fish"),
        ("\u212aelvin", "kelvin"),
        ("Straße", "strasse"),
        ("ǅemal", "džemal"),
        ("\u2460", "1"),  # a circled digit
    ],
)
def test_the_key_of_a_name(name, key):
    assert username_key(name) == key
    assert username_key(key) == key


@pytest.mark.parametrize(("stored", "other"), SAME_NAMES)
def test_signup_refuses_another_spelling_of_a_taken_name(db, stored, other):
    raw_user(stored)
    response = signup(other)
    assert response.status_code == 400
    assert NAME_TAKEN in response.text
    assert names() == [stored]


def test_signup_stores_the_key(db):
    assert signup("Émile").status_code == 302
    assert list(UsernameKey.objects.values_list("user__username", "key")) == [
        ("Émile", "émile")
    ]


def test_different_names_stay_different(db):
    for name in ("emile", "Émile", "Emilé", "fish", "fis"):
        assert signup(name).status_code == 302
    assert names() == ["Emilé", "emile", "fis", "fish", "Émile"]


def test_a_name_too_long_once_folded_is_refused(db):
    """ﷺ (U+FDFA) folds to 18 letters: the key would outgrow the 150 a name
    may have. A form error, not a database error."""
    response = signup("\ufdfa" * 9)
    assert response.status_code == 400
    assert TOO_LONG in response.text
    assert names() == []


@pytest.mark.parametrize(("stored", "other"), SAME_NAMES)
def test_the_database_refuses_another_spelling(db, stored, other):
    raw_user(stored)
    with pytest.raises(IntegrityError), transaction.atomic():
        raw_user(other)
    assert names() == [stored]


def test_the_database_refuses_a_rename_to_another_spelling(db):
    raw_user("Émile")
    bob = raw_user("bob")
    bob.username = "ÉMILE"
    with pytest.raises(IntegrityError), transaction.atomic():
        bob.save()
    assert names() == ["bob", "Émile"]
    assert UsernameKey.objects.get(user=bob).key == "bob"


def test_outside_a_transaction_a_taken_name_is_refused_before_the_write(
    transactional_db,
):
    """The shell or createsuperuser save without a transaction: the user row is
    not written when its key is taken."""
    raw_user("Émile")
    with pytest.raises(IntegrityError, match="“émile” is taken: it is “Émile”"):
        raw_user("émile")
    bob = raw_user("bob")
    bob.username = "E\u0301MILE"
    with pytest.raises(IntegrityError, match="is taken: it is “Émile”"):
        bob.save()
    assert names() == ["bob", "Émile"]
    assert UsernameKey.objects.get(user=bob).key == "bob"


def test_a_rename_moves_the_key(db):
    bob = raw_user("bob")
    bob.username = "Émile"
    bob.save()
    assert UsernameKey.objects.get(user=bob).key == "émile"
    assert signup("BOB").status_code == 302  # the old name is free again
    assert signup("émile").status_code == 400


def test_a_sign_up_that_loses_the_race_gets_the_form_error(db, monkeypatch):
    """The form saw the name free; another sign-up stored a spelling of it
    before this one's write: the database refuses it, the form says so (400)."""
    from accounts.adapter import AccountAdapter

    raw_user("Émile")
    monkeypatch.setattr(AccountAdapter, "clean_username", lambda self, name: name)
    client = Client()
    response = signup("ÉMILE", client=client)
    assert response.status_code == 400
    assert "That username was just taken: choose another." in response.text
    assert names() == ["Émile"]
    assert logged_in_as(client) is None


# -- login ---------------------------------------------------------------------------


@pytest.mark.parametrize(("stored", "other"), SAME_NAMES)
def test_login_by_any_spelling_finds_the_one_account(make_user, stored, other):
    user = make_user("x")
    user.username = stored  # as stored, not as create_user would normalise it
    user.save()
    for spelling in (stored, other):
        assert logged_in_as(login(spelling)) == stored


def test_a_wrong_password_in_another_spelling_is_refused(make_user):
    make_user("Émile")
    response = Client().post("/accounts/login/", {"login": "ÉMILE", "password": "no"})
    assert response.status_code == 400
    assert "The username and/or password you specified are not correct." in (
        response.text
    )


def test_failed_logins_in_every_spelling_count_against_the_one_account(
    settings, make_user
):
    """Each spelling of the name is the account's: five wrong passwords, each
    under another spelling and from another address, pause its logins."""
    user = make_user("x")
    user.username = "\ufb01sh"
    user.save()
    spellings = ["\ufb01sh", "fish", "FISH", "Fish", "ﬁSH", "fIsh"]
    for n in range(settings.LOGIN_FAILURE_LIMIT):
        response = Client().post(
            "/accounts/login/",
            {"login": spellings[n % len(spellings)], "password": "wrong"},
            REMOTE_ADDR=f"192.0.2.{n}",
        )
        assert response.status_code == 400
    client = Client()
    response = client.post(
        "/accounts/login/",
        {"login": "FiSH", "password": PASSWORD},
        REMOTE_ADDR="192.0.2.100",
    )
    assert response.status_code == 429
    assert "Too many failed logins for this account" in response.text
    assert logged_in_as(client) is None


# -- the admin -----------------------------------------------------------------------


@pytest.fixture
def staff(client_for, make_user):
    return client_for(make_user("root", is_staff=True, is_superuser=True))


def test_the_admin_refuses_to_add_another_spelling(staff):
    raw_user("Émile")
    response = staff.post(
        "/admin/auth/user/add/",
        {
            "username": "ÉMILE",
            "usable_password": "false",
            "password1": "",
            "password2": "",
        },
    )
    assert response.status_code == 200
    assert NAME_TAKEN in response.text
    assert names() == ["root", "Émile"]


def test_the_admin_refuses_a_rename_to_another_spelling(staff):
    raw_user("\ufb01sh")
    bob = raw_user("bob")
    page = staff.get(f"/admin/auth/user/{bob.pk}/change/")
    assert page.status_code == 200
    fields = {
        "username": "Fish",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    response = staff.post(f"/admin/auth/user/{bob.pk}/change/", fields)
    assert response.status_code == 200
    assert NAME_TAKEN in response.text
    assert names() == ["bob", "root", "\ufb01sh"]
    # Its own name in another spelling is no clash.
    response = staff.post(
        f"/admin/auth/user/{bob.pk}/change/", fields | {"username": "BOB"}
    )
    assert response.status_code == 302
    assert UsernameKey.objects.get(user=bob).key == "bob"


# -- the migration -------------------------------------------------------------------


MIGRATION = "accounts.migrations.0004_username_key"


def legacy_users(*usernames: str) -> None:
    """Users as they were before the migration: no key rows (the index on
    LOWER(username) alone; these names differ in LOWER on both databases)."""
    for username in usernames:
        raw_user(username)
        UsernameKey.objects.all().delete()


def test_the_migration_stores_every_key(db):
    migration = import_module(MIGRATION)
    legacy_users("Émile", "\ufb01sh", "bob")
    migration.store_username_keys(apps, None)
    assert sorted(UsernameKey.objects.values_list("user__username", "key")) == [
        ("bob", "bob"),
        ("Émile", "émile"),
        ("\ufb01sh", "fish"),
    ]


def test_the_migration_reports_names_that_would_be_one_and_merges_nothing(db):
    migration = import_module(MIGRATION)
    legacy_users("bob", "Émile", "E\u0301mile", "fish", "\ufb01sh", "straße", "STRASSE")
    expected = (
        "These would be one name: E\u0301mile, Émile; STRASSE, straße; fish, "
        "\ufb01sh. Rename all but one of each in the admin, then migrate again."
    )
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        migration.store_username_keys(apps, None)
    assert len(names()) == 7
    assert not UsernameKey.objects.exists()
