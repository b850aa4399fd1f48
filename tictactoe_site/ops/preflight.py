"""What the server and the task worker check before they start.

Debug mode shows tracebacks and settings to whoever triggers an error: a `.env`
left over from development (DJANGO_DEBUG=1) must not turn it on for a server that
a process manager starts on a public address. Email sent in clear text to another
host exposes password-reset links on the way.
"""

import ipaddress

from django.conf import settings

DEBUG_ON_PUBLIC_ADDRESS = "DJANGO_DEBUG_ON_PUBLIC_ADDRESS"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def debug_refusal(host: str, *, allowed: bool) -> str | None:
    """Why the server must not start with these settings, or None."""
    if not settings.DEBUG or is_loopback(host) or allowed:
        return None
    return (
        f"Debug mode is on (DJANGO_DEBUG, perhaps from a .env left by `make run`) "
        f"and the server would listen on {host}, where anyone who reaches it sees "
        f"tracebacks and settings. Set DJANGO_DEBUG=0 for production, listen on "
        f"127.0.0.1, or set {DEBUG_ON_PUBLIC_ADDRESS}=1 if you really mean it."
    )


def clear_text_mail_warning() -> str | None:
    """A warning when email goes to another host without TLS, or None."""
    relay = settings.MAILERS.get("relay", {})
    if not relay.get("BACKEND", "").endswith("smtp.EmailBackend"):
        return None
    options = relay.get("OPTIONS", {})
    host = options.get("host", "localhost")
    if is_loopback(host) or options.get("use_tls") or options.get("use_ssl"):
        return None
    return (
        f"Email goes to {host} without TLS: password-reset links cross the network "
        f"in clear text. Set DJANGO_EMAIL_USE_TLS=1 (docs/settings.md)."
    )
