from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connect the event receivers; register the system checks.
        from . import checks, events, live, signals  # noqa: F401
