"""What closing an account changes beyond the games (games.services settles
those): the account's email addresses go, confirmed or not, and so do its
second factors (secrets and passkeys a closed account must not keep)."""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.db import transaction

from games import services as games_services


@transaction.atomic
def close_account(*, user) -> None:
    """Close `user`'s account for good (games.services.close_account: inactive,
    no usable password, every session ended, the games settled) and remove
    every email address and second factor of theirs, in one transaction."""
    games_services.close_account(user=user)
    EmailAddress.objects.filter(user_id=user.pk).delete()
    Authenticator.objects.filter(user_id=user.pk).delete()
