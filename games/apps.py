from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from tictactoe_site.ops import health

        # Connect the receivers (the data export's games among them); register
        # the system checks and the your-turn emails' periodic task.
        from . import (  # noqa: F401
            checks,
            data_export,
            receivers,
            signals,
            turn_emails,
        )
        from .live import accounts  # noqa: F401
        from .live.hub import hub

        # What readiness checks, told from this side (ops imports no app).
        health.readiness_check(hub.readiness_problem)
