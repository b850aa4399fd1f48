"""The routes of a URLconf as a list, includes walked (accounts.urls nests
allauth's)."""

from django.urls import URLPattern, URLResolver


def routes(patterns, prefix: str = "") -> list[tuple[str, URLPattern]]:
    """(route as written, e.g. "2fa/webauthn/keys/<int:pk>/remove/", pattern)
    for every route under `patterns`, in resolving order."""
    found = []
    for pattern in patterns:
        written = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += routes(pattern.url_patterns, written)
        else:
            found.append((written, pattern))
    return found
