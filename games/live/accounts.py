"""A user logged out, changed password, was deactivated or deleted (Django's
signals and the user model's, whoever made the change: our pages, the admin,
allauth, the shell), or some of their browsers were signed out
(accounts.signals.sessions_ended): after commit, every process hears an
AccountChanged, and each hub ends those of the user's open streams whose
session no longer logs them in. Connected by games.apps."""

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from accounts.signals import sessions_ended

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


def _writes(instance, name: str, update_fields) -> bool:
    """Whether the save writes the field `name` (not a deferred one)."""
    return name in instance.__dict__ and (
        update_fields is None or name in update_fields
    )


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_saving")
def note_whether_the_account_changes(
    sender, instance, raw, using, update_fields, **kwargs
):
    """Whether this save of a stored user changes what their sessions depend
    on: their password (the session auth hash comes from it) or whether they
    are active (an inactive user is logged out). Read from the stored row on
    such saves only, not remembered of every user loaded: most are never
    saved, and last_login, saved at every login, is neither."""
    instance._live_account_changed = False
    if raw or instance._state.adding:
        return
    if _writes(instance, "is_active", update_fields) and not instance.is_active:
        # games.receivers may have written is_active in the stored row already:
        # saving an inactive account is enough (one inactive already has no
        # open streams left to end).
        instance._live_account_changed = True
    elif _writes(instance, "password", update_fields):
        stored = sender._base_manager.using(using).filter(pk=instance.pk)
        password = stored.values_list("password", flat=True).first()
        instance._live_account_changed = password not in (None, instance.password)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_saved")
def end_the_streams_of_a_changed_account(sender, instance, using, **kwargs):
    """A changed password or an inactive account, however saved (not
    last_login, at every login): the user's streams re-check their sessions."""
    if instance.__dict__.pop("_live_account_changed", False):
        publish_on_commit(AccountChanged(instance.pk), using=using)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="live_user_gone")
def end_the_streams_of_a_deleted_account(sender, instance, using, **kwargs):
    publish_on_commit(AccountChanged(instance.pk), using=using)


@receiver(sessions_ended, dispatch_uid="live_sessions_ended")
def end_the_streams_of_sessions_ended(sender, *, user_ids, **kwargs):
    for user_id in user_ids:
        publish_on_commit(AccountChanged(user_id))
