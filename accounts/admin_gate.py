"""Staff open the admin only with a second factor.

The admin checks no password: its login page sends visitors to the site's
(allauth's) login, which counts failed logins and asks for the second factor of
an account that has one, and its password pages to the site's. This admin site
sends a staff account without a second factor to set it up instead of showing
any admin page. It is the site's only admin site (the `default_site` of the
admin app in INSTALLED_APPS), so every model registered with `admin.site` is
behind it. The check costs one query, on admin pages only, for active staff
only: no other page pays anything for it.
"""

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.apps import AdminConfig
from django.contrib.admin.sites import AdminSite
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, resolve_url
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache

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

    @method_decorator(never_cache)
    @login_not_required
    def login(self, request, extra_context=None):
        """Never a password, whatever the method: a visitor goes to the site's
        login, then back to the admin; staff logged in go on to the admin (its
        pages behind the check above); anyone else logged in is refused."""
        index = reverse("admin:index", current_app=self.name)
        wanted = request.GET.get(REDIRECT_FIELD_NAME, "")
        safe = url_has_allowed_host_and_scheme(
            wanted, {request.get_host()}, require_https=request.is_secure()
        )
        if not safe:
            wanted = index
        if not request.user.is_authenticated:
            query = urlencode({REDIRECT_FIELD_NAME: wanted})
            return HttpResponseRedirect(f"{resolve_url(settings.LOGIN_URL)}?{query}")
        if not self.has_permission(request):
            raise PermissionDenied
        return HttpResponseRedirect(wanted)

    def password_change(self, request, extra_context=None):
        """The site's page, with its rules (the current password, its limits,
        the signed-in browser kept): the admin's own form would skip them."""
        return redirect("account_change_password")

    def password_change_done(self, request, extra_context=None):
        return redirect("account_change_password")


class StaffAdminConfig(AdminConfig):
    default_site = "accounts.admin_gate.StaffAdminSite"
