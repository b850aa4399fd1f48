"""429 pages that say which limit refused and how long to wait.

allauth answers its own limits with the site's handler429 (tictactoe_site.urls)
without saying which limit refused: the page tells, by its URL name, and so does
allauth's action behind it, whose rates (allauth.account's RATE_LIMITS, with
this site's settings) give the wait. The wait stated is the limit's window, the
longest a refused client waits (the counts slide: the oldest leaves first).
Failed logins are refused by the login form itself (accounts.adapter).
"""

import math
from datetime import timedelta

from allauth.account import app_settings
from allauth.mfa import app_settings as mfa_settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from tictactoe_site.lib.error_pages import error_page

# The account pages that can answer 429 (on POST): allauth's action, and the
# page's sentence saying what it counts. Actions of allauth.mfa are in
# MFA_ACTIONS.
ACTIONS = {
    "account_login": (
        "login",
        gettext_lazy("Too many login attempts from your network."),
    ),
    "account_signup": ("signup", gettext_lazy("Too many sign-ups from your network.")),
    "account_reauthenticate": (
        "reauthenticate",
        gettext_lazy("Too many password confirmations."),
    ),
    "account_email": (
        "manage_email",
        gettext_lazy("Too many changes to your email addresses."),
    ),
    "account_change_password": (
        "change_password",
        gettext_lazy("Too many password changes."),
    ),
    "account_set_password": (
        "change_password",
        gettext_lazy("Too many password changes."),
    ),
    "account_reset_password": (
        "reset_password",
        gettext_lazy(
            "Too many password-reset requests for this address or from your network."
        ),
    ),
    "account_reset_password_from_key": (
        "reset_password_from_key",
        gettext_lazy("Too many uses of password-reset links from your network."),
    ),
}
MFA_ACTIONS = {
    "mfa_login_webauthn": (
        "webauthn_login",
        gettext_lazy("Too many passkey logins from your network."),
    ),
}
OTHER_REQUESTS = gettext_lazy("Too many requests.")

# allauth's units of a rate's window ("5/m/user", "5/15m/ip").
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def window(rates: str) -> timedelta:
    """The longest window of allauth's rates, e.g. 15 minutes for
    "5/15m/ip,5/15m/key", one minute for "5/m/user"."""
    seconds = 0.0
    for rate in rates.split(","):
        duration = rate.strip().split("/")[1]
        seconds = max(seconds, float(duration[:-1] or 1) * UNIT_SECONDS[duration[-1]])
    return timedelta(seconds=seconds)


def wait_text(wait: timedelta) -> str:
    """Like "40 seconds", "1 minute", "15 minutes": rounded up, never shorter."""
    seconds = math.ceil(wait.total_seconds())
    if seconds < 60:
        return ngettext("%(count)d second", "%(count)d seconds", seconds) % {
            "count": seconds
        }
    minutes = math.ceil(seconds / 60)
    return ngettext("%(count)d minute", "%(count)d minutes", minutes) % {
        "count": minutes
    }


def retry_after(wait: timedelta) -> str:
    """The Retry-After header's seconds, rounded up."""
    return str(math.ceil(wait.total_seconds()))


def too_many(request, *, refusal: str, wait: timedelta | None):
    """The 429 page: `refusal`, the sentence that says what was counted; the
    wait (also as Retry-After)."""
    if wait is None:
        message = _("%(refusal)s Please wait a little and try again.") % {
            "refusal": refusal
        }
    else:
        message = _("%(refusal)s Please wait %(wait)s and try again.") % {
            "refusal": refusal,
            "wait": wait_text(wait),
        }
    response = error_page(
        request, title=_("Too many requests"), message=message, status=429
    )
    if wait is not None:
        response["Retry-After"] = retry_after(wait)
    return response


def too_many_requests(request):
    """The 429 page of allauth's limits (tictactoe_site.urls.handler429)."""
    name = request.resolver_match.url_name if request.resolver_match else None
    if name in MFA_ACTIONS:
        action, refusal = MFA_ACTIONS[name]
        rates = mfa_settings.RATE_LIMITS.get(action)
    else:
        action, refusal = ACTIONS.get(name, (None, OTHER_REQUESTS))
        rates = app_settings.RATE_LIMITS.get(action) if action else None
    return too_many(request, refusal=refusal, wait=window(rates) if rates else None)
