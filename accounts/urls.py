"""Account routes under /accounts/: allauth's views (its URL names, which its
code reverses), each behind the site's status codes, and closing an account."""

from allauth.account import views as allauth_views
from allauth.mfa.base import views as mfa_views
from allauth.mfa.recovery_codes import views as recovery_views
from allauth.mfa.totp import views as totp_views
from allauth.mfa.webauthn import views as webauthn_views
from django.urls import path, re_path
from django.utils.translation import gettext_lazy as _

from tictactoe_site.lib.http_methods import allow_methods, get_only

from . import keep_account_views, preference_views, privacy_views, views
from .guests import keep_first
from .views import account_page

logout = allow_methods("POST", hint=_("Use the Log out button at the top."))(
    keep_account_views.logout_warning_for_guests(allauth_views.logout)
)

urlpatterns = [
    path("signup/", account_page(views.SignupView.as_view()), name="account_signup"),
    path("login/", account_page(allauth_views.login), name="account_login"),
    path("logout/", logout, name="account_logout"),
    path(
        "reauthenticate/",
        keep_first(account_page(allauth_views.reauthenticate)),
        name="account_reauthenticate",
    ),
    # A guest keeps the account first (accounts.guests.keep_first).
    path(
        "email/",
        keep_first(account_page(allauth_views.email)),
        name="account_email",
    ),
    path(
        "confirm-email/",
        account_page(allauth_views.email_verification_sent),
        name="account_email_verification_sent",
    ),
    re_path(
        r"^confirm-email/(?P<key>[-:\w]+)/$",
        account_page(allauth_views.confirm_email),
        name="account_confirm_email",
    ),
    path(
        "password/change/",
        keep_first(account_page(allauth_views.password_change)),
        name="account_change_password",
    ),
    path(
        "password/set/",
        keep_first(account_page(allauth_views.password_set)),
        name="account_set_password",
    ),
    path(
        "password/reset/",
        account_page(allauth_views.password_reset),
        name="account_reset_password",
    ),
    path(
        "password/reset/done/",
        account_page(allauth_views.password_reset_done),
        name="account_reset_password_done",
    ),
    re_path(
        r"^password/reset/key/(?P<uidb36>[0-9A-Za-z]+)-(?P<key>.+)/$",
        account_page(allauth_views.password_reset_from_key),
        name="account_reset_password_from_key",
    ),
    path(
        "password/reset/key/done/",
        account_page(allauth_views.password_reset_from_key_done),
        name="account_reset_password_from_key_done",
    ),
    path(
        "inactive/",
        account_page(allauth_views.account_inactive),
        name="account_inactive",
    ),
    path("close/", views.close_account, name="account_close"),
    # A guest's account becomes a normal one (accounts.keep_account).
    path("keep/", keep_account_views.keep, name="account_keep"),
    # Your signed-in browsers, and your data (accounts.privacy_views).
    path("sessions/end/", privacy_views.end_sessions, name="account_end_sessions"),
    path(
        "data/",
        keep_first(privacy_views.download_data),
        name="account_download_data",
    ),
    # Language and time zone, saved on the account (accounts.preference_views).
    path(
        "preferences/",
        preference_views.preferences_page,
        name="account_preferences",
    ),
    path("turn-email/", views.turn_email_settings, name="turn_email_settings"),
    path(
        "turn-email/unsubscribe/<str:token>/",
        views.turn_email_unsubscribe,
        name="turn_email_unsubscribe",
    ),
]

# -- two-factor authentication and passkeys: allauth.mfa's views under /accounts/2fa/
# (its URL names, which its code reverses), behind the site's status codes and
# readable 405 page. Re-authentication is by password (settings), so allauth's
# second-factor re-authentication pages are not routed; nor is its passkey sign-up.
urlpatterns += [
    path("2fa/", get_only(mfa_views.index), name="mfa_index"),
    path(
        "2fa/authenticate/",
        account_page(mfa_views.authenticate),
        name="mfa_authenticate",
    ),
    path(
        "2fa/totp/activate/",
        account_page(totp_views.activate_totp),
        name="mfa_activate_totp",
    ),
    path(
        "2fa/totp/deactivate/",
        account_page(totp_views.deactivate_totp),
        name="mfa_deactivate_totp",
    ),
    path(
        "2fa/recovery-codes/",
        get_only(recovery_views.view_recovery_codes),
        name="mfa_view_recovery_codes",
    ),
    path(
        "2fa/recovery-codes/generate/",
        account_page(recovery_views.generate_recovery_codes),
        name="mfa_generate_recovery_codes",
    ),
    path(
        "2fa/recovery-codes/download/",
        get_only(recovery_views.download_recovery_codes),
        name="mfa_download_recovery_codes",
    ),
    path(
        "2fa/webauthn/",
        get_only(webauthn_views.list_webauthn),
        name="mfa_list_webauthn",
    ),
    path(
        "2fa/webauthn/add/",
        account_page(webauthn_views.add_webauthn),
        name="mfa_add_webauthn",
    ),
    path(
        "2fa/webauthn/keys/<int:pk>/remove/",
        account_page(webauthn_views.remove_webauthn),
        name="mfa_remove_webauthn",
    ),
    path(
        "2fa/webauthn/keys/<int:pk>/edit/",
        account_page(webauthn_views.edit_webauthn),
        name="mfa_edit_webauthn",
    ),
    path(
        "2fa/webauthn/login/",
        account_page(webauthn_views.login_webauthn),
        name="mfa_login_webauthn",
    ),
]
