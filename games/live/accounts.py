"""A user logged out, changed password, was deactivated or deleted (Django's
signals and the user model's, whoever made the change: our pages, the admin,
allauth, the shell): after commit, every process hears an AccountChanged, and
each hub ends those of the user's open streams whose session no longer logs
them in. Connected by games.apps."""

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_init, post_save
from django.dispatch import receiver

from . import AccountChanged, publish_on_commit


@receiver(user_logged_out, dispatch_uid="live_user_logged_out")
def end_the_streams_of_a_session_logged_out(sender, *, request, user, **kwargs):
    if user is None or user.pk is None:
        return
    # logout() sends this signal before it deletes the session: delete it now
    # (logout then finds it gone), so that the processes re-checking the user's
    # streams at once already find the session gone.
    request.session.delete()
    publish_on_commit(AccountChanged(user.pk))


# A user's session auth hash comes from their password; an inactive user is
# logged out. A field deferred when the user was loaded reads as None.
ACCOUNT_FIELDS = ("password", "is_active")


def _account_state(user) -> tuple:
    return tuple(user.__dict__.get(name) for name in ACCOUNT_FIELDS)


@receiver(post_init, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_init")
def remember_the_account_state(sender, instance, **kwargs):
    """What a later save compares with (no query: only what was loaded)."""
    instance._live_account_state = _account_state(instance)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_saved")
def end_the_streams_of_a_changed_account(
    sender, instance, created, raw, using, update_fields, **kwargs
):
    """A changed password or is_active, however saved: the user's streams
    re-check their sessions."""
    if update_fields is not None and not set(ACCOUNT_FIELDS) & set(update_fields):
        return  # e.g. last_login, at every login
    state = _account_state(instance)
    changed = state != getattr(instance, "_live_account_state", None)
    instance._live_account_state = state
    if changed and not (created or raw):
        publish_on_commit(AccountChanged(instance.pk), using=using)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_gone")
def end_the_streams_of_a_deleted_account(sender, instance, using, **kwargs):
    publish_on_commit(AccountChanged(instance.pk), using=using)
