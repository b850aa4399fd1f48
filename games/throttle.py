"""Login throttling glue for django-axes (limits in settings: LOGIN_*, AXES_*).

Who a client is for counting failed logins, and the page a throttled person sees.
"""

import ipaddress

from django.conf import settings
from django.shortcuts import render

# AccessAttempt.username is a varchar(255).
USERNAME_STORED = 255


def _valid_ip(value: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((value or "").strip()))
    except ValueError:
        return None


def client_ip(request) -> str | None:
    """The address failed logins are counted against.

    REMOTE_ADDR, unless TRUSTED_PROXY_COUNT proxies sit in front of the app: then
    the address the outermost of them saw, counted from the right of
    X-Forwarded-For (entries further left are whatever the client claimed). A
    malformed header falls back to REMOTE_ADDR rather than to an address the
    client chose.
    """
    remote = request.META.get("REMOTE_ADDR")
    count = settings.TRUSTED_PROXY_COUNT
    if count > 0:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        if len(forwarded) >= count:
            return _valid_ip(forwarded[-count]) or _valid_ip(remote)
    return _valid_ip(remote)


def username(request, credentials=None) -> str | None:
    """The username failed logins are counted against, cut to what django-axes
    can store: the login form does not limit its length, and a longer one made
    PostgreSQL refuse the record (a 500). No real username is that long."""
    field = settings.AXES_USERNAME_FORM_FIELD
    data = credentials if credentials else request.POST
    value = data.get(field)
    return value[:USERNAME_STORED] if isinstance(value, str) else value


def locked_out(request, response=None, credentials=None):
    """The 429 page instead of the login form while logins are paused."""
    minutes = settings.LOGIN_COOLOFF_MINUTES
    message = (
        "Too many failed login attempts for this account or from your network, "
        f"so logging in is paused for {minutes} minute{'s' if minutes != 1 else ''}. "
        "Please wait and try again."
    )
    return render(
        request,
        "registration/locked_out.html",
        {"title": "Too many login attempts", "message": message},
        status=429,
    )
