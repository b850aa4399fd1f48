"""Mails in their recipient's language and time zone (accounts.account_mail,
games.turn_emails): the account's saved language, else the language of the
request that asked for the mail, else settings.LANGUAGE_CODE; built so by the
worker as well as on the request's side. allauth ships German and French for
its reset mail, which shows it in the text; our own mails' catalogs are filled
later, so for them the language active while they are built is what is
checked."""

from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone, translation
from django_tasks_db.models import DBTaskResult

from accounts import services as account_services
from accounts.adapter import AccountAdapter
from accounts.models import Preferences
from games import services, turn_emails

from ..conftest import PASSWORD
from ..support.account_client import NEW_PASSWORD, confirmed

QUEUED = {
    "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
    "relay": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
}
GERMAN_SUBJECT = "[tictactoe] E-Mail zum Zurücksetzen des Passworts"
GERMAN_BODY = "Falls du ihn vergessen hast: Dein Benutzername ist dora."
FRENCH_SUBJECT = "[tictactoe] E-mail de réinitialisation de mot de passe"
ENGLISH_SUBJECT = "[tictactoe] Password Reset Email"


@pytest.fixture
def built_in(monkeypatch):
    """(template, language, zone) of every allauth mail, as it is built."""
    seen = []
    render_mail = AccountAdapter.render_mail

    def spy(self, template_prefix, email, context, *args, **kwargs):
        seen.append(
            (
                template_prefix,
                translation.get_language(),
                timezone.get_current_timezone_name(),
            )
        )
        return render_mail(self, template_prefix, email, context, *args, **kwargs)

    monkeypatch.setattr(AccountAdapter, "render_mail", spy)
    return seen


@pytest.fixture
def dora(make_user):
    dora = make_user("dora")
    confirmed(dora, "dora@example.com")
    return dora


def ask_for_reset(language: str = "en"):
    response = Client().post(
        "/accounts/password/reset/",
        {"email": "dora@example.com"},
        HTTP_ACCEPT_LANGUAGE=language,
    )
    assert response.status_code == 302
    return response


def test_a_german_players_reset_mail_is_german(dora, built_in):
    Preferences.objects.create(user=dora, language="de", time_zone="Asia/Tokyo")
    asked = ask_for_reset("en")
    (message,) = mail.outbox
    assert message.subject == GERMAN_SUBJECT
    assert GERMAN_BODY in message.body
    assert built_in == [("account/email/password_reset_key", "de", "Asia/Tokyo")]
    # The page that asked goes on in its own language.
    assert asked.headers["Content-Language"] == "en"


def test_the_worker_builds_it_in_german_too(dora, built_in, settings, run_tasks):
    settings.MAILERS = QUEUED
    Preferences.objects.create(user=dora, language="de")
    ask_for_reset("fr")
    (task,) = DBTaskResult.objects.all()
    (refs,) = task.args_kwargs["args"]
    assert refs["language"] == "fr"  # the request's; the account's wins
    built_in.clear()
    run_tasks()
    (message,) = mail.outbox
    assert message.subject == GERMAN_SUBJECT
    assert GERMAN_BODY in message.body
    assert built_in == [("account/email/password_reset_key", "de", "UTC")]


def test_without_a_saved_language_the_request_s_language_is_kept(
    dora, built_in, settings, run_tasks
):
    settings.MAILERS = QUEUED
    ask_for_reset("fr")
    run_tasks()
    (message,) = mail.outbox
    assert message.subject == FRENCH_SUBJECT
    assert built_in[-1] == ("account/email/password_reset_key", "fr", "UTC")


def test_without_either_the_site_s_language(dora, built_in, settings, run_tasks):
    settings.MAILERS = QUEUED
    ask_for_reset("xx")
    (task,) = DBTaskResult.objects.all()
    task.args_kwargs["args"][0].pop("language")  # as queued before this change
    task.save()
    run_tasks()
    (message,) = mail.outbox
    assert message.subject == ENGLISH_SUBJECT
    assert built_in[-1] == ("account/email/password_reset_key", "en", "UTC")


def test_a_mail_about_no_account_goes_in_the_address_owners_language(dora, built_in):
    """Someone signs up with dora's confirmed address: the notice goes to dora,
    in her language."""
    Preferences.objects.create(user=dora, language="de")
    response = Client().post(
        "/accounts/signup/",
        {
            "username": "mallory",
            "email": "dora@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
        HTTP_ACCEPT_LANGUAGE="es",
    )
    assert response.status_code == 302
    assert [message.to for message in mail.outbox] == [["dora@example.com"]]
    assert built_in == [("account/email/address_in_use", "de", "UTC")]


def test_a_notice_shows_its_time_in_the_recipients_zone(
    alice, client_for, built_in, settings, clock
):
    """The time of a change (allauth's "Date:") at 12:00 UTC, for a player in
    Tokyo who reads German: 21:00 there, the zone named."""
    settings.ACCOUNT_EMAIL_NOTIFICATIONS = True
    Preferences.objects.create(user=alice, language="de", time_zone="Asia/Tokyo")
    confirmed(alice, "alice@example.com")
    changed = client_for(alice).post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert changed.status_code == 302
    (notice,) = mail.outbox
    assert "27. November 2026 21:00, Japan (Ortszeit)" in notice.body
    assert built_in == [("account/email/password_changed", "de", "Asia/Tokyo")]


# -- your-turn emails ---------------------------------------------------------


@pytest.fixture
def turn_mail_built_in(monkeypatch):
    """(template, language, zone) of each part of a your-turn email."""
    seen = []
    render = turn_emails.render_to_string

    def spy(template_name, context):
        seen.append(
            (
                template_name.rsplit("/", 1)[1],
                translation.get_language(),
                timezone.get_current_timezone_name(),
            )
        )
        return render(template_name, context)

    monkeypatch.setattr(turn_emails, "render_to_string", spy)
    return seen


def waiting_on(bob, alice):
    game = services.create_game(creator=alice, opponent=bob, side="o")
    game.refresh_from_db()
    return game.updated_at + timedelta(seconds=2 * 3600)


@pytest.mark.parametrize(
    ("saved", "expected"),
    [(("de", "America/Sao_Paulo"), ("de", "America/Sao_Paulo")), (None, ("en", "UTC"))],
)
def test_a_turn_email_is_built_in_the_players_language_and_zone(
    alice, bob, turn_mail_built_in, saved, expected, settings
):
    settings.GAMES_TURN_EMAIL_AFTER = 3600
    confirmed(bob, "bob@example.com")
    account_services.set_turn_emails(user=bob, enabled=True)
    if saved:
        Preferences.objects.create(user=bob, language=saved[0], time_zone=saved[1])
    with translation.override("fr"):  # whatever the worker had active
        assert turn_emails.send_due_turn_emails(now=waiting_on(bob, alice)) == 1
        assert translation.get_language() == "fr"
    assert turn_mail_built_in == [
        ("your_turn_subject.txt", *expected),
        ("your_turn_message.txt", *expected),
    ]
    (message,) = mail.outbox
    assert message.to == ["bob@example.com"]
