"""Account routes under /accounts/: allauth's views (its URL names, which its
code reverses), each behind the site's status codes, and closing an account."""

from allauth.account import views as allauth_views
from django.urls import path, re_path

from games.http import allow_methods

from . import privacy_views, views
from .views import account_page

logout = allow_methods("POST", hint="Use the Log out button at the top.")(
    allauth_views.logout
)

urlpatterns = [
    path("signup/", account_page(views.SignupView.as_view()), name="account_signup"),
    path("login/", account_page(allauth_views.login), name="account_login"),
    path("logout/", logout, name="account_logout"),
    path(
        "reauthenticate/",
        account_page(allauth_views.reauthenticate),
        name="account_reauthenticate",
    ),
    path("email/", account_page(allauth_views.email), name="account_email"),
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
        account_page(allauth_views.password_change),
        name="account_change_password",
    ),
    path(
        "password/set/",
        account_page(allauth_views.password_set),
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
    # Your signed-in browsers, and your data (accounts.privacy_views).
    path("sessions/end/", privacy_views.end_sessions, name="account_end_sessions"),
    path("data/", privacy_views.download_data, name="account_download_data"),
    path("turn-email/", views.turn_email_settings, name="turn_email_settings"),
    path(
        "turn-email/unsubscribe/<str:token>/",
        views.turn_email_unsubscribe,
        name="turn_email_unsubscribe",
    ),
]
