"""Staff open the admin only with a second factor.

The admin's login already goes through the site's (allauth's) login, which asks
for the second factor of an account that has one (accounts.admin). This admin
site sends a staff account without one to set it up instead of showing any admin
page. It is the site's only admin site (the `default_site` of the admin app in
INSTALLED_APPS), so every model registered with `admin.site` is behind it. The
check costs one query, on admin pages only, for active staff only: no other page
pays anything for it.
"""

from functools import wraps

from django.contrib import messages
from django.contrib.admin.apps import AdminConfig
from django.contrib.admin.sites import AdminSite
from django.shortcuts import redirect
from django.utils.translation import gettext_lazy as _

SET_UP_FIRST = _(
    "Staff open the admin only with a second factor: set up an authenticator app "
    "or a passkey here, then open the admin again."
)


def has_second_factor(user) -> bool:
    # Imported when first asked: this module is loaded with the app registry
    # (INSTALLED_APPS), before allauth's models can be.
    from allauth.mfa.models import Authenticator
    from allauth.mfa.utils import is_mfa_enabled

    return is_mfa_enabled(user, [Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN])


class StaffAdminSite(AdminSite):
    def admin_view(self, view, cacheable=False):
        """Django's, behind the second-factor check: anyone who is not active
        staff meets Django's own answer (the login page, or 403)."""
        admin_view = super().admin_view(view, cacheable)

        @wraps(admin_view)
        def gated(request, *args, **kwargs):
            user = request.user
            if user.is_active and user.is_staff and not has_second_factor(user):
                messages.warning(request, SET_UP_FIRST)
                return redirect("mfa_index")
            return admin_view(request, *args, **kwargs)

        return gated


class StaffAdminConfig(AdminConfig):
    default_site = "accounts.admin_gate.StaffAdminSite"
