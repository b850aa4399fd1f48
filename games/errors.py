"""Error pages with a message a person can act on (wired in tictactoe_site.urls)."""

from django.shortcuts import render
from django.urls import Resolver404


def _error_page(request, status: int, title: str, message: str):
    return render(
        request, "error.html", {"title": title, "message": message}, status=status
    )


def bad_request(request, exception=None):
    return _error_page(
        request, 400, "Bad request", "That request could not be understood."
    )


def permission_denied(request, exception=None):
    message = str(exception) if exception and str(exception) else None
    return _error_page(
        request, 403, "Not allowed", message or "You are not allowed to do that."
    )


def not_found(request, exception=None):
    message = None
    if exception is not None and not isinstance(exception, Resolver404):
        message = str(exception) or None
    return _error_page(
        request, 404, "Not found", message or "There is nothing at this address."
    )


def csrf_failure(request, reason=""):
    return _error_page(
        request,
        403,
        "Form expired",
        "This form was rejected because its security token is missing or out of "
        "date. Go back, reload the page and try again.",
    )
