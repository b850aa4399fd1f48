"""The account's email address through HTTP: the password asked first, the
address added unconfirmed, confirmed, changed and removed; a confirmed address
of another account answers the same and can never be confirmed for this one.
"""

from django.core import mail

from ..conftest import PASSWORD
from ..support.account_client import (
    addresses,
    confirmed,
    logged_in_as,
    mailed_link,
)

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
