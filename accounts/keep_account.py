"""A guest keeps the account: the same user, with its games, records,
head-to-heads and blocks, gets a password (and the name it chooses, once) and
stops being a guest; the pages that showed them as one show them anew
(accounts.guests.became_account).

The name may change only in this step: the account page has no such field, and
once the Guest row is gone there is nothing left to keep. The new name must be
free in the shared namespace (accounts.usernames); the database refuses a name
that a simultaneous sign-up took, as it does at sign-up.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from .guests import became_account
from .models import Guest


class NotAGuest(Exception):
    """The account is not a guest's (a normal account, kept already, closed)."""


@transaction.atomic
def keep_account(*, user, username: str, password: str):
    """Make guest `user` a normal account named `username` with `password`, in
    one transaction: the Guest row goes as the password is set. Returns the
    account as stored (for the session's new hash). NotAGuest if it is not an
    active guest's; an IntegrityError if another account took the name's key
    meanwhile (nothing changes)."""
    guest = (
        Guest.objects.select_for_update()
        .filter(user_id=user.pk, user__is_active=True)
        .first()
    )
    if guest is None:
        raise NotAGuest()
    # The games before the account row: the order closing and rematches lock
    # them in (games.services.settle_games_and_deactivate), so the two cannot deadlock.
    became_account(user)
    account = get_user_model().objects.select_for_update().get(pk=user.pk)
    account.username = username
    account.set_password(password)
    account.save(update_fields=["username", "password"])
    guest.delete()
    return account
