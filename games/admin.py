"""Staff inspect games here. A game's state is read-only: only games.services may
change it, so no admin form can store an impossible game. Deleting is allowed."""

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.template.loader import render_to_string

from .models import Game, Move


class BoundedDateChangeList(ChangeList):
    """Django's date_hierarchy lets an out-of-range ?<field>__year= (9999, or
    99999999999) escape as ValueError/OverflowError, a 500. Treat it as the bad
    filter it is: the admin then shows its usual "?e=1" page."""

    def get_filters(self, request):
        try:
            return super().get_filters(request)
        except (ValueError, OverflowError) as exc:
            raise IncorrectLookupParameters(exc) from exc


class BoundedDateHierarchy:
    def get_changelist(self, request, **kwargs):
        return BoundedDateChangeList


# Staff see (and may delete, to unlock someone) the failed logins django-axes
# counts; registered here (AXES_ENABLE_ADMIN is off) to get the bounded dates.
@admin.register(AccessAttempt)
class LoginAttemptAdmin(BoundedDateHierarchy, AccessAttemptAdmin):
    pass


class MoveInline(admin.TabularInline):
    model = Move
    fields = ["sequence_number", "player", "row", "col", "created_at"]
    readonly_fields = fields
    ordering = ["sequence_number"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Game)
class GameAdmin(BoundedDateHierarchy, admin.ModelAdmin):
    list_display = [
        "id",
        "player_x",
        "player_o",
        "status",
        "move_count",
        "created_at",
        "updated_at",
    ]
    list_filter = ["status", "created_at"]
    search_fields = ["player_x__username", "player_o__username"]
    list_select_related = ["player_x", "player_o"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    inlines = [MoveInline]
    fields = [
        "player_x",
        "player_o",
        "status",
        "board_display",
        "move_count",
        "winning_line",
        "version",
        "rematch_of",
        "created_at",
        "updated_at",
        "finished_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("player_x", "player_o")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Viewing needs "view" permission; nothing here may edit a game.
        return False

    @admin.display(description="Board")
    def board_display(self, obj: Game) -> str:
        return render_to_string("games/admin_board.html", {"game": obj})
