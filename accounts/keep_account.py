"""A guest keeps the account: the same user, with its games, records,
head-to-heads and blocks, gets a password (and the name it chooses, once) and
stops being a guest. Also what pages need to know about guests here: whether a
user is one, and how the pages that showed them are refreshed.

The name may change only in this step: the account page has no such field, and
once the Guest row is gone there is nothing left to keep. The new name must be
free in the shared namespace (accounts.usernames); the database refuses a name
that a simultaneous sign-up took, as it does at sign-up.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from games import services as games_services

from .models import Guest


class NotAGuest(Exception):
    """The account is not a guest's (a normal account, kept already, closed)."""


def is_guest(user) -> bool:
    """Whether `user` (logged in: active) is a guest. No query for an account
    with a usable password, which no guest has (accounts.guests)."""
    if user.has_usable_password():
        return False
    return Guest.objects.filter(user_id=user.pk).exists()


def became_account(user) -> None:
    """Every page that showed `user` as a guest (name and mark) is shown anew:
    the games' versions move (games.services.show_player_anew), so game pages,
    live parts and lobbies, all cached by what they show, render again, and
    open pages reload their live part."""
    games_services.show_player_anew(user=user)


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
    # them in (games.services.deactivate_account), so the two cannot deadlock.
    became_account(user)
    account = get_user_model().objects.select_for_update().get(pk=user.pk)
    account.username = username
    account.set_password(password)
    account.save(update_fields=["username", "password"])
    guest.delete()
    return account
