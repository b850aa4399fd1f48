from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connect the receivers; register the system checks.
        from . import checks, live, receivers, signals  # noqa: F401
