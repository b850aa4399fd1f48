"""What closing an account changes beyond the games (games.services settles
those): the account's email addresses go, confirmed or not."""

from allauth.account.models import EmailAddress
from django.db import transaction

from games import services as games_services


@transaction.atomic
def close_account(*, user) -> None:
    """Close `user`'s account for good (games.services.close_account: inactive,
    no usable password, every session ended, the games settled) and remove
    every email address of theirs, in one transaction."""
    games_services.close_account(user=user)
    EmailAddress.objects.filter(user_id=user.pk).delete()
