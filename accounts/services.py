"""Closing an account: the one place it happens (the close page, the idle
guests' housekeeping). The games settle first (games.services); then what the
account itself keeps goes: its password and email, its email addresses,
confirmed or not, and its second factors (secrets and passkeys a closed account
must not keep)."""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.db import transaction

from games import services as games_services


@transaction.atomic
def close_account(*, user) -> None:
    """Close `user`'s account for good, in one transaction.

    The account is made inactive with its unfinished games settled
    (games.services.settle_games_and_deactivate), and gets no usable password
    and no email address: Django refuses their logins and password resets, and
    every session of theirs ends (the session hash depends on the password;
    inactive users are logged out). Every email address and second factor of
    theirs goes. The user row stays, so finished games, records and
    head-to-heads stay and the username cannot be registered again. An account
    deactivated already keeps its password and email."""
    if games_services.settle_games_and_deactivate(user=user):
        account = get_user_model().objects.get(pk=user.pk)
        account.set_unusable_password()
        account.email = ""
        account.save(update_fields=["password", "email"])
    EmailAddress.objects.filter(user_id=user.pk).delete()
    Authenticator.objects.filter(user_id=user.pk).delete()
