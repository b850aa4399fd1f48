"""Second factors in the admin (allauth.mfa's Authenticator), without their
secrets: allauth's own admin shows and edits each one's data, the authenticator
app's secret and the recovery codes' seed, to any staff member with view rights.
Here staff see whose factor of which kind, added and last used when, and may
delete one (someone who lost every factor); nobody adds or edits one."""

from allauth.mfa.models import Authenticator
from django.contrib import admin


def drop_dangling_recovery_codes(user_ids) -> None:
    """Recovery codes stand in for another factor: without one they go too, as
    when their owner removes it (allauth.mfa)."""
    with_a_factor = Authenticator.objects.exclude(
        type=Authenticator.Type.RECOVERY_CODES
    ).values("user_id")
    Authenticator.objects.filter(
        user_id__in=user_ids, type=Authenticator.Type.RECOVERY_CODES
    ).exclude(user_id__in=with_a_factor).delete()


admin.site.unregister(Authenticator)


@admin.register(Authenticator)
class AuthenticatorAdmin(admin.ModelAdmin):
    list_display = ["user", "type", "created_at", "last_used_at"]
    list_filter = ["type", "created_at", "last_used_at"]
    search_fields = ["user__username"]
    fields = ["user", "type", "created_at", "last_used_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        drop_dangling_recovery_codes([obj.user_id])

    def delete_queryset(self, request, queryset) -> None:
        user_ids = list(queryset.values_list("user_id", flat=True))
        super().delete_queryset(request, queryset)
        drop_dangling_recovery_codes(user_ids)
