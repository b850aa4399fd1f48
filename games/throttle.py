"""Login throttling glue for django-axes (limits in settings: LOGIN_*, AXES_*),
and the password-reset throttle (PASSWORD_RESET_LIMIT).

Who a client is for counting failed logins and reset requests, and the pages a
throttled person sees.
"""

import ipaddress
from datetime import timedelta

from django.conf import settings
from django.shortcuts import render
from django.utils import timezone
from django.utils.crypto import salted_hmac

from .models import PasswordResetRequest

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


# -- password resets ------------------------------------------------------------


def _address_key(email: str) -> str:
    return salted_hmac(
        "games.throttle.reset", email.strip().lower(), algorithm="sha256"
    ).hexdigest()


def reset_allowed(request, email: str) -> bool:
    """Whether a password-reset request for `email` may go ahead, and if so count
    it: at most PASSWORD_RESET_LIMIT per client address and per email address
    (known or not) in LOGIN_COOLOFF_MINUTES. Refused requests are not counted,
    so the pause ends on time however often someone keeps asking."""
    limit = settings.PASSWORD_RESET_LIMIT
    if limit <= 0:
        return True
    since = timezone.now() - timedelta(minutes=settings.LOGIN_COOLOFF_MINUTES)
    ip, key = client_ip(request), _address_key(email)
    recent = PasswordResetRequest.objects.filter(requested_at__gte=since)
    if recent.filter(address_key=key).count() >= limit or (
        ip is not None and recent.filter(client_ip=ip).count() >= limit
    ):
        return False
    PasswordResetRequest.objects.filter(requested_at__lt=since).delete()
    PasswordResetRequest.objects.create(client_ip=ip, address_key=key)
    return True


def reset_throttled(request):
    """The 429 page instead of another reset email."""
    minutes = settings.LOGIN_COOLOFF_MINUTES
    message = (
        "Too many password-reset requests for this email address or from your "
        f"network, so sending reset emails is paused for {minutes} "
        f"minute{'s' if minutes != 1 else ''}. If an email is on its way, use "
        "the link in it; otherwise wait and try again."
    )
    return render(
        request,
        "registration/locked_out.html",
        {"title": "Too many reset requests", "message": message},
        status=429,
    )
