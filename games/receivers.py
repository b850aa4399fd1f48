"""What games does on other apps' signals. When Django saves a user: an account
deactivated (closed: accounts.services.close_account; staff unticking "Active"
in the admin; `user.is_active = False; user.save()` in a shell) has its games
settled. When a guest keeps the account (accounts.signals.guest_kept): the
pages that marked their name show it plain.

Before the save (pre_save), while the stored row still says active: the
settling and the deactivation then commit together, inside the caller's
transaction (the admin's) or in one of their own (a shell's autocommit save).
A bulk `QuerySet.update(is_active=False)` sends no signal; `check_games` reports
a game it leaves waiting on an inactive player.
"""

from django.conf import settings
from django.db.models.signals import pre_save
from django.dispatch import receiver

from accounts.signals import guest_kept

from . import services


@receiver(pre_save, sender=settings.AUTH_USER_MODEL)
def settle_games_of_deactivated_user(sender, instance, raw, update_fields, **kwargs):
    if raw or instance.is_active or instance.pk is None:
        return
    if update_fields is not None and "is_active" not in update_fields:
        return
    services.settle_games_and_deactivate(user=instance)


@receiver(guest_kept, dispatch_uid="games_guest_kept")
def show_the_kept_name(sender, *, user, **kwargs):
    services.names_changed(user=user)
