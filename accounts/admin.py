"""The user admin: Django's, plus which accounts are closed (a closed account
is an inactive user: accounts.services) and which are guests; games/admin.py
adds each player's game record. One's own password is changed on the site's
page. Email addresses are allauth's admin (account/emailaddress). Signed-in
browsers and second factors are shown and may be deleted, never added or
edited: a browser deleted is signed out as on the account page; a second
factor shows no secret (allauth's own admin shows and edits each one's data,
the authenticator app's secret and the recovery codes' seed, to any staff
member with view rights), and is deleted for someone who lost every factor."""

from allauth.mfa.models import Authenticator
from allauth.usersessions.adapter import get_adapter
from allauth.usersessions.models import UserSession
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import guests
from .forms import AdminUserChangeForm, AdminUserCreationForm

User = get_user_model()

admin.site.unregister(User)
admin.site.unregister(UserSession)
admin.site.unregister(Authenticator)


class ClosedAccountFilter(admin.SimpleListFilter):
    title = gettext_lazy("account")
    parameter_name = "account"

    def lookups(self, request, model_admin):
        return [("open", _("Open")), ("closed", _("Closed"))]

    def queryset(self, request, queryset):
        if self.value() == "closed":
            return queryset.filter(is_active=False)
        if self.value() == "open":
            return queryset.filter(is_active=True)
        return queryset


class GuestFilter(admin.SimpleListFilter):
    """Guest accounts (accounts.guests) apart from the others."""

    title = gettext_lazy("guest")
    parameter_name = "guest"

    def lookups(self, request, model_admin):
        return [("yes", _("Guests")), ("no", _("Accounts"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(guest__isnull=False)
        if self.value() == "no":
            return queryset.filter(guest__isnull=True)
        return queryset


@admin.register(User)
class PlayerAdmin(UserAdmin):
    # Names unique whatever their case or Unicode spelling (accounts.usernames).
    add_form = AdminUserCreationForm
    form = AdminUserChangeForm
    list_display = [*UserAdmin.list_display, "account_closed", "is_guest"]
    list_filter = [ClosedAccountFilter, GuestFilter, *UserAdmin.list_filter]
    list_select_related = ["guest"]

    def user_change_password(self, request, id, form_url=""):
        """Another's password: Django's form. One's own: the site's page, which
        asks for the current password and counts the attempts."""
        if unquote(id) == str(request.user.pk):
            return redirect("account_change_password")
        return super().user_change_password(request, id, form_url)

    @admin.display(description=gettext_lazy("Guest"), boolean=True)
    def is_guest(self, obj) -> bool:
        return guests.is_guest(obj)

    @admin.display(
        description=gettext_lazy("Closed"), boolean=True, ordering="is_active"
    )
    def account_closed(self, obj) -> bool:
        return not obj.is_active


class ShownAndDeletedOnly(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(UserSession)
class UserSessionAdmin(ShownAndDeletedOnly):
    """Deleting a browser signs it out, its live streams with it, as the
    account page does (accounts.user_sessions)."""

    list_display = ["user", "created_at", "ip", "user_agent"]
    list_select_related = ["user"]
    search_fields = ["user__username", "ip"]
    fields = ["user", "created_at", "ip", "user_agent"]
    readonly_fields = fields

    def delete_model(self, request, obj) -> None:
        get_adapter().end_sessions([obj])

    def delete_queryset(self, request, queryset) -> None:
        get_adapter().end_sessions(queryset)


def drop_dangling_recovery_codes(user_ids) -> None:
    """Recovery codes stand in for another factor: without one they go too, as
    when their owner removes it (allauth.mfa)."""
    with_a_factor = Authenticator.objects.exclude(
        type=Authenticator.Type.RECOVERY_CODES
    ).values("user_id")
    Authenticator.objects.filter(
        user_id__in=user_ids, type=Authenticator.Type.RECOVERY_CODES
    ).exclude(user_id__in=with_a_factor).delete()


@admin.register(Authenticator)
class AuthenticatorAdmin(ShownAndDeletedOnly):
    list_display = ["user", "type", "created_at", "last_used_at"]
    list_filter = ["type", "created_at", "last_used_at"]
    search_fields = ["user__username"]
    fields = ["user", "type", "created_at", "last_used_at"]
    readonly_fields = fields

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        drop_dangling_recovery_codes([obj.user_id])

    def delete_queryset(self, request, queryset) -> None:
        user_ids = list(queryset.values_list("user_id", flat=True))
        super().delete_queryset(request, queryset)
        drop_dangling_recovery_codes(user_ids)
