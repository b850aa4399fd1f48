from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        # Receivers that keep the username keys; housekeeping for the heartbeat.
        from . import housekeeping, usernames  # noqa: F401
        from .middleware import remember_at_login, stamp_login

        user_logged_in.connect(stamp_login, dispatch_uid="accounts.stamp_login")
        user_logged_in.connect(
            remember_at_login, dispatch_uid="accounts.remember_preferences"
        )
