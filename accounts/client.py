"""Who a client is, for the limits on logins, password resets and confirmation
mails (allauth groups IPv6 addresses by /64: ALLAUTH_RATE_LIMIT_IPV6_PREFIX).
The one place that decides which proxy headers to trust."""

import ipaddress

from django.conf import settings


def _valid_ip(value: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((value or "").strip()))
    except ValueError:
        return None


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, unless TRUSTED_PROXY_COUNT proxies sit
    in front of the app: then the address the outermost of them saw, counted
    from the right of X-Forwarded-For (entries further left are whatever the
    client claimed). A malformed header falls back to REMOTE_ADDR rather than to
    an address the client chose."""
    return forwarded_ip(
        request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR", "")
    )


def forwarded_ip(remote: str | None, forwarded_for: str) -> str | None:
    """client_ip from the peer's address and the X-Forwarded-For header, for a
    caller without a request (the live streams, games.live.streams)."""
    count = settings.TRUSTED_PROXY_COUNT
    if count > 0:
        forwarded = forwarded_for.split(",")
        if len(forwarded) >= count:
            return _valid_ip(forwarded[-count]) or _valid_ip(remote)
    return _valid_ip(remote)
