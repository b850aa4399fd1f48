"""Account routes under /accounts/: allauth's own routes (its paths and URL
names, which its code reverses), each behind the site's status codes; our
overrides before them; and our pages allauth lacks (closing an account…)."""

from allauth.account import views as allauth_views
from django.urls import URLPattern, URLResolver, include, path
from django.utils.translation import gettext_lazy as _

from tictactoe_site.lib.error_pages import allow_methods, get_only

from .guests import keep_first
from .views import account, guests, preferences, privacy
from .views.account import account_page

# allauth's routes we do not serve: re-authentication is by password only
# (settings), so not by emailed code, second factor or passkey; login by code
# is off; the account page lists signed-in browsers itself (sessions/end/).
NOT_SERVED = {
    "account_request_reauthentication_code",
    "account_confirm_reauthentication_code",
    "account_confirm_login_code",
    "mfa_reauthenticate",
    "mfa_reauthenticate_webauthn",
    "usersessions_list",
}
# allauth's pages that only show something: GET only, with the site's 405 page.
SHOW_ONLY = {
    "mfa_index",
    "mfa_view_recovery_codes",
    "mfa_download_recovery_codes",
    "mfa_list_webauthn",
}
# allauth's pages that need a password or an address: a guest keeps the
# account first (accounts.guests.keep_first).
GUEST_KEEPS_FIRST = {
    "account_reauthenticate",
    "account_email",
    "account_change_password",
    "account_set_password",
}


def served(patterns, *, skip: set[str]) -> list[URLPattern | URLResolver]:
    """allauth's `patterns` (nested includes kept), each view behind the site's
    status codes and 405 page (accounts.views.account.account_page, or get_only), the
    routes named in NOT_SERVED and `skip` left out."""
    routes = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = served(pattern.url_patterns, skip=skip)
            routes.append(URLResolver(pattern.pattern, inner, pattern.default_kwargs))
        elif pattern.name not in NOT_SERVED | skip:
            name = pattern.name
            view = (get_only if name in SHOW_ONLY else account_page)(pattern.callback)
            if name in GUEST_KEEPS_FIRST:
                view = keep_first(view)
            routes.append(URLPattern(pattern.pattern, view, pattern.default_args, name))
    return routes


logout = allow_methods("POST", hint=_("Use the Log out button at the top."))(
    guests.logout_warning_for_guests(allauth_views.logout)
)

# Our overrides of allauth's routes (the same paths and names).
overrides = [
    # Our sign-up form's refusal of a username taken in between.
    path("signup/", account_page(account.SignupView.as_view()), name="account_signup"),
    # POST only; a guest is warned first (accounts.views.guests).
    path("logout/", logout, name="account_logout"),
]

urlpatterns = [
    *overrides,
    *served(
        path("", include("allauth.urls")).url_patterns,
        skip={pattern.name for pattern in overrides},
    ),
    path("close/", account.close_account, name="account_close"),
    # A guest's account becomes a normal one (accounts.views.guests).
    path("keep/", guests.keep, name="account_keep"),
    # Your signed-in browsers, and your data (accounts.views.privacy).
    path("sessions/end/", privacy.end_sessions, name="account_end_sessions"),
    path(
        "data/",
        keep_first(privacy.download_data),
        name="account_download_data",
    ),
    # Language and time zone, saved on the account (accounts.views.preferences).
    path(
        "preferences/",
        preferences.preferences_page,
        name="account_preferences",
    ),
    path(
        "private-games/",
        preferences.private_games_setting,
        name="private_games_setting",
    ),
    path("turn-email/", account.turn_email_settings, name="turn_email_settings"),
    path(
        "turn-email/unsubscribe/<str:token>/",
        account.turn_email_unsubscribe,
        name="turn_email_unsubscribe",
    ),
]
