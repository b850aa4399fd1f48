"""The site's error pages: `error_page()`, the one way a view, a decorator or a
middleware answers with a readable refusal; the handlers Django calls
(tictactoe_site.urls' handler400/403/404/500, settings.CSRF_FAILURE_VIEW); and
the pages of the two refusals every request passes before a view works
(tictactoe_site.ops.middleware.refuse_before_views): a method the view does not
take (`get_only`, `post_only`, `allow_methods` mark a view; a readable 405,
where Django's require_http_methods answers with an empty body) and a NUL byte
(no address or field has a use for U+0000, and PostgreSQL refuses it in text,
so a NUL that reached a query would be a 500).

Why a game refuses an action is games.refusals; this module only shows it."""

import sys

from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, pgettext
from django.views import defaults

from . import database_outages

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
    names it. What is an outage: tictactoe_site.lib.database_outages (a write
    refused by a standby included, whose connection is discarded); other
    database errors (IntegrityError, ProgrammingError) are bugs and stay 500s.
    The page is rendered without the request (not through `error_page`): its
    context would read the session and the user, that is, the database again.
    """
    exception = sys.exc_info()[1]
    if not database_outages.is_outage(exception):
        return defaults.server_error(request)
    if database_outages.is_read_only_refusal(exception):
        database_outages.discard()
    html = render_to_string(
        "error.html",
        {"title": _("Try again in a moment"), "message": _(DATABASE_UNAVAILABLE)},
    )
    response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


# -- methods ----------------------------------------------------------------------

# A hint is a lazy translation (or any text), read when the page is answered.
GAME_BUTTONS_HINT = gettext_lazy("Use the buttons on the game page.")


def allow_methods(*methods: str, hint: str = GAME_BUTTONS_HINT):
    """Marks a view with the methods it takes; tictactoe_site.ops.middleware's
    `refuse_before_views` answers any other with `method_not_allowed` (a
    wrapper would run on every request; a mark costs nothing)."""
    allowed = frozenset(methods) | ({"HEAD"} if "GET" in methods else set())

    def decorator(view):
        view.allowed_methods = allowed
        view.method_hint = hint
        return view

    return decorator


def method_not_allowed(request, allowed, hint: str) -> HttpResponse:
    allow = ", ".join(sorted(allowed))
    # Said without the methods' names, which a reader does not know.
    if "POST" not in allowed:
        message = _("This address is a page to open: it takes no form.")
    elif "GET" not in allowed:
        message = _("This address only takes what a button or form of this site sends.")
    else:
        message = _("This address does not take that kind of request.")
    if "POST" in allowed and hint:
        message = pgettext("one sentence after another", "%(first)s %(next)s") % {
            "first": message,
            "next": str(hint),
        }
    response = error_page(
        request, title=_("Method not allowed"), message=message, status=405
    )
    response["Allow"] = allow
    return response


def get_only(view):
    return allow_methods("GET")(view)


def post_only(view):
    return allow_methods("POST")(view)


def nul_byte_refusal(request) -> HttpResponse:
    return error_page(
        request,
        title=_("Bad request"),
        message=_(
            "That request contained a character that is not "
            "allowed (a NUL byte). Check what you typed and try again."
        ),
        status=400,
    )
