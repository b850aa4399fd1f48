from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.conf import settings

        from tictactoe_site.ops import health, metrics

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

        # What operations count and check, told from this side (ops imports no app).
        signals.move_made.connect(metrics.count_move, dispatch_uid="metrics_moves")

        def live_updates_problem() -> str | None:
            # The hub runs where the server started it (ASGI lifespan). A listener
            # on Redis does not count: Redis is shared, and its outage would take
            # every host out at once while every page still works.
            if settings.REDIS_URL or hub.loop is None or hub.listening.is_set():
                return None
            return "live updates not connected"

        health.readiness_check(live_updates_problem)
