from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connect the receivers; register the system checks.
        from . import checks, receivers, signals  # noqa: F401
        from .live import accounts  # noqa: F401
