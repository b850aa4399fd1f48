"""accounts' writes: closing an account, a guest keeping theirs, the language
and time zone saved on an account, the your-turn email choice. Games settle
through signals: a saved `is_active=False` (games.receivers) and
accounts.signals.guest_kept."""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import transaction
from django.urls import reverse

from .models import Guest, Preferences, TurnEmailPreference
from .signals import guest_kept

# Signed for this one purpose: no other signed value of the site unsubscribes.
UNSUBSCRIBE_SALT = "accounts.turn_emails.unsubscribe"


@transaction.atomic
def close_account(*, user) -> None:
    """Close `user`'s account for good, in one transaction.

    The account is made inactive (games.receivers settles its unfinished games
    first, in this transaction) and gets no usable password and no email
    address: Django refuses their logins and password resets, and every
    session of theirs ends (the session hash depends on the password; inactive
    users are logged out). Every email address and second factor of theirs
    goes. The user row stays, so finished games, records and head-to-heads stay
    and the username cannot be registered again. An account deactivated
    already keeps its password and email."""
    account = get_user_model().objects.filter(pk=user.pk, is_active=True).first()
    if account is not None:
        account.is_active = False
        account.set_unusable_password()
        account.email = ""
        account.save(update_fields=["is_active", "password", "email"])
    EmailAddress.objects.filter(user_id=user.pk).delete()
    Authenticator.objects.filter(user_id=user.pk).delete()


class NotAGuest(Exception):
    """The account is not a guest's (a normal account, kept already, closed)."""


@transaction.atomic
def keep_account(*, user, username: str, password: str):
    """Make guest `user` a normal account named `username` with `password`, in
    one transaction: the Guest row goes as the password is set, and every page
    that showed the name marked shows it plain (accounts.signals.guest_kept).
    Returns the account as stored (for the session's new hash). NotAGuest if
    it is not an active guest's; an IntegrityError if another account took the
    name's key meanwhile (nothing changes). The name may change only in this
    step, and must be free in the shared namespace (accounts.usernames)."""
    guest = (
        Guest.objects.select_for_update()
        .filter(user_id=user.pk, user__is_active=True)
        .first()
    )
    if guest is None:
        raise NotAGuest()
    # The games before the account row: the order closing and rematches lock
    # them in, so the two cannot deadlock.
    guest_kept.send(sender=Guest, user=user)
    account = get_user_model().objects.select_for_update().get(pk=user.pk)
    account.username = username
    account.set_password(password)
    account.save(update_fields=["username", "password"])
    guest.delete()
    return account


def save_language(*, user, language: str) -> Preferences:
    """Save `language` ("" for the browser's) on `user`'s account."""
    preferences, _ = Preferences.objects.update_or_create(
        user=user, defaults={"language": language}
    )
    return preferences


def save_time_zone(*, user, time_zone: str) -> Preferences:
    """Save `time_zone` (as accounts.middleware.zone_named gave it) on `user`'s
    account."""
    preferences, _ = Preferences.objects.update_or_create(
        user=user, defaults={"time_zone": time_zone}
    )
    return preferences


@transaction.atomic
def save_preferences(*, user, language: str, time_zone: str) -> Preferences:
    """Save both choices of the account page "Language and time", or neither."""
    save_language(user=user, language=language)
    return save_time_zone(user=user, time_zone=time_zone)


def set_new_games_private(*, user, private: bool) -> Preferences:
    """Whether every game `user` starts from now on is private (games reads it)."""
    preferences, _ = Preferences.objects.update_or_create(
        user=user, defaults={"new_games_private": private}
    )
    return preferences


def set_turn_emails(*, user, enabled: bool) -> None:
    TurnEmailPreference.objects.update_or_create(
        user=user, defaults={"enabled": enabled}
    )


def unsubscribe_url(user_id: int) -> str:
    """The link in a your-turn email (games.turn_emails) that turns them off."""
    token = signing.dumps(user_id, salt=UNSUBSCRIBE_SALT)
    return settings.SITE_URL + reverse("turn_email_unsubscribe", args=[token])


def unsubscriber(token: str) -> int:
    """The user id an unsubscribe token was made for; signing.BadSignature if
    it was not made by `unsubscribe_url`."""
    return signing.loads(token, salt=UNSUBSCRIBE_SALT)


def unsubscribe(*, user_id: int) -> None:
    TurnEmailPreference.objects.filter(user_id=user_id).update(enabled=False)
