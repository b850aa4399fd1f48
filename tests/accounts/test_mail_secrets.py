"""No secret link readable at rest: a queued password-reset or confirmation mail
is stored as references (which mail, to whom, whose account or address), never
as its text. The worker builds the link when it sends, and the link works.

What is read: the task table (arguments, return values, tracebacks) and the task
admin, as staff see them, after a reset request and a sign-up."""

import json
import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client
from django_tasks_db.models import DBTaskResult

from ..conftest import PASSWORD
from ..support.account_client import NEW_PASSWORD, confirmed, mailed_link

QUEUED = {
    "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
    "relay": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
}
# What a link with a secret looks like, whatever its host.
SECRET_LINK = re.compile(r"/accounts/(password/reset/key|confirm-email)/[^\s\"'<]+")
TASK_ADMIN = "/admin/django_tasks_database/dbtaskresult/"


def stored_tasks() -> str:
    """Everything the task table keeps, as one text."""
    rows = DBTaskResult.objects.values(
        "args_kwargs", "return_value", "traceback", "exception_class_path"
    )
    return json.dumps(list(rows), default=str)


def task_admin_pages(root) -> str:
    client = Client()
    client.force_login(root)
    listing = client.get(TASK_ADMIN)
    assert listing.status_code == 200
    pages = [listing.text]
    for pk in DBTaskResult.objects.values_list("pk", flat=True):
        page = client.get(f"{TASK_ADMIN}{pk}/change/")
        assert page.status_code == 200
        assert "args kwargs" in page.text.lower()  # the field is shown
        pages.append(page.text)
    return "\n".join(pages)


@pytest.fixture
def reset_and_signup(settings, run_tasks, make_user):
    """dora (a confirmed address) asks for a reset; erin signs up with an
    address. Both mails wait in the queue."""
    settings.MAILERS = QUEUED
    dora = make_user("dora")
    confirmed(dora, "dora@example.com")
    response = Client().post("/accounts/password/reset/", {"email": "dora@example.com"})
    assert response.status_code == 302
    signup = Client().post(
        "/accounts/signup/",
        {
            "username": "erin",
            "email": "erin@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert signup.status_code == 302
    assert mail.outbox == []
    assert DBTaskResult.objects.filter(status="READY").count() == 2
    return dora


def test_the_queue_holds_no_link_before_and_after_sending(
    reset_and_signup, run_tasks, make_user
):
    root = make_user("root", is_staff=True, is_superuser=True)
    at_rest = [stored_tasks(), task_admin_pages(root)]
    for text in at_rest:
        assert SECRET_LINK.search(text) is None
        assert "dora@example.com" in text or "erin@example.com" in text

    run_tasks()

    reset, confirmation = sorted(mail.outbox, key=lambda message: message.to)
    keys = [mailed_link(reset), mailed_link(confirmation)]
    assert keys[0].startswith("/accounts/password/reset/key/")
    assert keys[1].startswith("/accounts/confirm-email/")
    sent = [stored_tasks(), task_admin_pages(root)]
    assert set(DBTaskResult.objects.values_list("return_value", flat=True)) == {"sent"}
    for text in at_rest + sent:
        for link in keys:
            secret = link.rstrip("/").rsplit("/", 1)[1]
            assert secret not in text
        assert SECRET_LINK.search(text) is None


def test_the_links_the_worker_builds_work(reset_and_signup, run_tasks):
    run_tasks()
    reset, confirmation = sorted(mail.outbox, key=lambda message: message.to)
    assert reset.to == ["dora@example.com"]
    assert confirmation.to == ["erin@example.com"]

    client = Client()
    form = client.get(mailed_link(reset), follow=True)
    assert form.status_code == 200
    assert "Choose a new password" in form.text
    done = client.post(
        form.redirect_chain[-1][0],
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert done.status_code == 302
    assert done["Location"] == "/accounts/password/reset/key/done/"
    reset_and_signup.refresh_from_db()
    assert reset_and_signup.check_password(NEW_PASSWORD)

    confirmed_page = Client().post(mailed_link(confirmation))
    assert confirmed_page.status_code == 302
    assert EmailAddress.objects.get(email="erin@example.com").verified


def test_a_reset_whose_address_was_removed_meanwhile_is_not_sent(
    reset_and_signup, run_tasks
):
    """The worker checks the references again: the address must still be a
    confirmed address of the account when the link is made."""
    EmailAddress.objects.filter(email="dora@example.com").delete()
    run_tasks()
    assert [message.to for message in mail.outbox] == [["erin@example.com"]]
    assert sorted(DBTaskResult.objects.values_list("return_value", flat=True)) == [
        "not sent: its account or address changed",
        "sent",
    ]


@pytest.mark.parametrize(
    ("address", "template"),
    [
        ("dora@example.com", "account/email/password_reset_key"),
        ("nobody@example.com", "account/email/unknown_account"),
    ],
)
def test_a_reset_request_builds_no_mail_whether_the_address_is_known_or_not(
    settings, make_user, monkeypatch, address, template
):
    """The request queues the references only: it renders no mail, so a reset
    for an address with an account costs what one without costs (the served
    timing tests measure it; building the reset mail in the request took 5 ms
    more on PostgreSQL)."""
    settings.MAILERS = QUEUED
    confirmed(make_user("dora"), "dora@example.com")

    def refuse(refs):
        raise AssertionError(f"{refs['template']} built in the request")

    monkeypatch.setattr("accounts.account_mail.build", refuse)
    response = Client().post("/accounts/password/reset/", {"email": address})
    assert response.status_code == 302
    (task,) = DBTaskResult.objects.all()
    (refs,) = task.args_kwargs["args"]
    assert (refs["template"], refs["to"]) == (template, address)


def test_a_notice_is_queued_as_plain_values_and_built_by_the_worker(
    settings, run_tasks, client_for, alice
):
    """allauth's notices (a password changed; the MFA ones) carry the time, the
    address and the browser: stored as plain values, shown as allauth shows
    them, with the site's address, not the request's Host."""
    settings.MAILERS = QUEUED
    settings.ACCOUNT_EMAIL_NOTIFICATIONS = True
    settings.SITE_URL = "https://ttt.example.com"
    settings.ALLOWED_HOSTS = ["evil.example"]
    confirmed(alice, "alice@example.com")
    changed = client_for(alice, HTTP_HOST="evil.example").post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        REMOTE_ADDR="198.51.100.8",
        HTTP_USER_AGENT="Firefox/140.0",
    )
    assert changed.status_code == 302
    (task,) = DBTaskResult.objects.all()
    (refs,) = task.args_kwargs["args"]
    assert refs["template"] == "account/email/password_changed"
    assert refs["values"] == {"ip": "198.51.100.8", "user_agent": "Firefox/140.0"}
    assert set(refs["times"]) == {"timestamp"}
    assert "evil.example" not in json.dumps(refs)

    run_tasks()
    (notice,) = mail.outbox
    assert notice.to == ["alice@example.com"]
    assert "- IP address: 198.51.100.8" in notice.body
    assert "- Browser: Firefox/140.0" in notice.body
    assert "ttt.example.com" in notice.body
    assert "evil.example" not in notice.body


def test_a_mail_with_a_code_or_an_object_is_refused_before_it_is_queued(db):
    """A code cannot be made again from a reference (allauth keeps it in the
    session): login, reset and verification by code are off, and a mail that
    carries one, or any value JSON cannot hold, stops at once."""
    from accounts.account_mail import references

    with pytest.raises(ValueError, match="a mail with a code cannot be queued"):
        references("account/email/login_code", "a@example.com", {"code": "1234"})
    with pytest.raises(TypeError, match="account/email/x: thing cannot be queued"):
        references("account/email/x", "a@example.com", {"thing": object()})


def test_only_known_builders_are_run(db):
    """The task table names which code builds a mail only among BUILDERS."""
    from tictactoe_site.jobs.mail import deliver

    with pytest.raises(KeyError):
        deliver.call({"build": "os.system", "to": "a@example.com"})
