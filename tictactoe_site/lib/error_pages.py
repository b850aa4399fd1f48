"""The site's error pages: `error_page()`, the one way a view, a decorator or a
middleware answers with a readable refusal, and the handlers Django calls
(tictactoe_site.urls' handler400/403/404/500, settings.CSRF_FAILURE_VIEW).

Why a game refuses an action is games.refusals; this module only shows it."""

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views import defaults

# Marked for translation, kept English here: the live streams answer with it as
# is (games.live.streams); the page translates it.
DATABASE_UNAVAILABLE = gettext_noop(
    "The game server cannot reach its database right now. Try again in a moment."
)
# Seconds a client (or a proxy) should wait before retrying after that page.
RETRY_AFTER_SECONDS = 5


def error_page(request, *, title: str, message: str, status: int) -> HttpResponse:
    """error.html with `title` and `message` (both already in the reader's
    language), answered with `status`."""
    return render(
        request, "error.html", {"title": title, "message": message}, status=status
    )


def bad_request(request, exception=None):
    return error_page(
        request,
        title=_("Bad request"),
        message=_("That request could not be understood."),
        status=400,
    )


def permission_denied(request, exception=None):
    message = str(exception) if exception and str(exception) else None
    return error_page(
        request,
        title=_("Not allowed"),
        message=message or _("You are not allowed to do that."),
        status=403,
    )


def not_found(request, exception=None):
    message = None
    if exception is not None and not isinstance(exception, Resolver404):
        message = str(exception) or None
    return error_page(
        request,
        title=_("Not found"),
        message=message or _("There is nothing at this address."),
        status=404,
    )


def csrf_failure(request, reason=""):
    return error_page(
        request,
        title=_("Form expired"),
        message=_(
            "This form was rejected because its security token is missing or out "
            "of date. Go back, reload the page and try again."
        ),
        status=403,
    )


def server_error(request):
    """An unreachable database is an outage, not a bug: 503 with a message.

    Django calls this while the exception is being handled, so sys.exc_info()
    names it. Outages surface as OperationalError (refused, closed, pool timeout,
    server shutting down) or InterfaceError (connection already closed); other
    database errors (IntegrityError, ProgrammingError) are bugs and stay 500s.
    The page is rendered without the request (not through `error_page`): its
    context would read the session and the user, that is, the database again.
    """
    exception = sys.exc_info()[1]
    if not isinstance(exception, OperationalError | InterfaceError):
        return defaults.server_error(request)
    html = render_to_string(
        "error.html",
        {"title": _("Try again in a moment"), "message": _(DATABASE_UNAVAILABLE)},
    )
    response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
