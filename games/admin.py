"""Staff inspect games here. A game's state is read-only: only games.services may
change it, so no admin form can store an impossible game. Deleting is allowed."""

from django.contrib import admin
from django.template.loader import render_to_string

from .models import Game, Move


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
class GameAdmin(admin.ModelAdmin):
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
