import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")

from tictactoe_site.ops import sentry  # noqa: E402

sentry.start()  # nothing without SENTRY_DSN
application = get_wsgi_application()
