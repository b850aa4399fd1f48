"""One name per person, whatever its case or Unicode spelling.

Two names are the same when their keys are: the name in Unicode compatibility
form (NFKC), case-folded, and in that form again (so that the key of a key is
itself) — `Émile` and `émile`, `E` + combining accent + `mile`, `ﬁsh` and
`fish`, the Kelvin sign and `K`, `straße` and `STRASSE`. Neither database can
compute this in an index (SQLite's LOWER folds only ASCII; PostgreSQL's follows
the database's collation), so each user's key is stored in its own row
(accounts.models.UsernameKey), unique in the database, written with every save
that sets or changes the name (the receivers below: sign-up, the admin, the
shell, createsuperuser).

The database has the last word: two sign-ups racing for spellings of one name
both pass the form, and the second key row is refused, in the sign-up's
transaction (accounts.forms.SignupForm.try_save). A save outside any
transaction (the shell, createsuperuser) would write the user row before its
key row: there a taken key is refused first, before anything is written.
"""

import unicodedata

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _

from .models import KEY_MAX_LENGTH, UsernameKey

# Django's own message (django.contrib.auth), which allauth shows too: their
# catalogs translate it.
TAKEN = _("A user with that username already exists.")
TOO_LONG = _("That username is too long.")


def username_key(name: str) -> str:
    """NFKC, case folding, NFKC again: the compatibility caseless form that
    allauth's own comparison of identifiers uses (NFKC, then casefold),
    normalised once more so that the key of a key is itself."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def holder(key: str, *, other_than=None) -> str | None:
    """The name of the account (other than `other_than`, a user) whose name
    has `key`; None if there is none."""
    rows = UsernameKey.objects.filter(key=key)
    if other_than is not None and other_than.pk is not None:
        rows = rows.exclude(user_id=other_than.pk)
    return rows.values_list("user__username", flat=True).first()


def check_available(name: str, *, user=None) -> None:
    """A ValidationError unless `name` may be `user`'s (None: a new account):
    no other account has its key, and the key fits its column."""
    key = username_key(name)
    if len(key) > KEY_MAX_LENGTH:
        raise ValidationError(TOO_LONG, code="username_too_long")
    if holder(key, other_than=user) is not None:
        raise ValidationError(TAKEN, code="username_taken")


def account_name(login: str) -> str:
    """The stored name of the account that `login` spells, or `login` itself
    when there is none: login by any spelling of one's name."""
    return holder(username_key(login)) or login


# Keeping the key rows ---------------------------------------------------------------


def _may_write_the_name(sender, update_fields) -> bool:
    # Not a save of other fields only (e.g. last_login, at every login).
    return update_fields is None or sender.USERNAME_FIELD in update_fields


@receiver(
    pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts_username_check"
)
def refuse_a_taken_name_outside_a_transaction(
    sender, instance, update_fields, using, **kwargs
):
    """Outside a transaction the user row would stay written if its key row
    were refused: refuse it first. Inside one, the key row's unique constraint
    refuses it and the transaction takes the user row back too."""
    if connections[using].in_atomic_block:
        return
    if not _may_write_the_name(sender, update_fields):
        return
    name = instance.get_username()
    taken_by = holder(username_key(name), other_than=instance)
    if taken_by is not None:
        raise IntegrityError(
            f"The username “{name}” is taken: it is “{taken_by}” once case and "
            "Unicode spelling are set aside."
        )


@receiver(
    post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts_username_key"
)
def store_the_key(sender, instance, created, update_fields, using, **kwargs):
    """The key row as the saved name's, compared with the stored one (only on
    saves that may write the name)."""
    if not created and not _may_write_the_name(sender, update_fields):
        return
    key = username_key(instance.get_username())
    keys = UsernameKey.objects.using(using)
    if created:
        keys.create(user=instance, key=key)
        return
    stored = keys.filter(user=instance).values_list("key", flat=True).first()
    if stored is None:
        keys.create(user=instance, key=key)
    elif stored != key:
        keys.filter(user=instance).update(key=key)
