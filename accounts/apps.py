from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from .middleware import stamp_login

        user_logged_in.connect(stamp_login, dispatch_uid="accounts.stamp_login")
