"""Staff inspect games here, and each player's record in the user admin. A
game's state is read-only: only games.services may change it, so no admin form
can store an impossible game. Deleting is allowed."""

import csv
import json

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy, ngettext

from accounts.admin import PlayerAdmin

from . import presentation, services
from .field_lists import GAME_ROW_PLAYERS
from .models import Block, Game, Move, PlayerRecord, PlayerResult


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
    list_select_related = ["player_x", "player_o", "player_x__guest", "player_o__guest"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    inlines = [MoveInline]
    actions = ["export_moves_json", "export_moves_csv"]
    fields = [
        "player_x",
        "player_o",
        "status",
        "board_display",
        "move_count",
        "winning_line",
        "version",
        "rematch_of",
        "created_by",
        "aborted_by",
        "created_at",
        "updated_at",
        "finished_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related(*GAME_ROW_PLAYERS)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Viewing needs "view" permission; nothing here may edit a game.
        return False

    def delete_model(self, request, obj):
        services.delete_games(game_ids=[obj.pk])

    def delete_queryset(self, request, queryset):
        """Through the service, so that records and series are recounted."""
        services.delete_games(game_ids=list(queryset.values_list("pk", flat=True)))

    @admin.display(description=gettext_lazy("Board"))
    def board_display(self, obj: Game) -> str:
        return render_to_string("games/admin_board.html", {"game": obj})

    def _with_moves(self, queryset):
        return queryset.select_related("player_x", "player_o").prefetch_related("moves")

    @admin.action(
        description=gettext_lazy("Export the moves of the selected games as JSON")
    )
    def export_moves_json(self, request, queryset):
        games = [
            {
                "id": game.pk,
                "player_x": game.player_x and game.player_x.get_username(),
                "player_o": game.player_o and game.player_o.get_username(),
                "status": game.status,
                "finished_at": game.finished_at and game.finished_at.isoformat(),
                "moves": [
                    presentation.move_json(move)
                    | {"played_at": move.created_at.isoformat()}
                    for move in game.moves.all()
                ],
            }
            for game in self._with_moves(queryset).order_by("pk")
        ]
        response = HttpResponse(
            json.dumps({"games": games}, indent=2), content_type="application/json"
        )
        response["Content-Disposition"] = 'attachment; filename="game-moves.json"'
        return response

    @admin.action(
        description=gettext_lazy("Export the moves of the selected games as CSV")
    )
    def export_moves_csv(self, request, queryset):
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="game-moves.csv"'
        writer = csv.writer(response)
        writer.writerow(
            ["game", "sequence_number", "player", "username", "row", "col", "played_at"]
        )
        for game in self._with_moves(queryset).order_by("pk"):
            for move in game.moves.all():
                user = game.player_for(move.player)
                writer.writerow(
                    [
                        game.pk,
                        move.sequence_number,
                        move.player,
                        user.get_username(),
                        move.row,
                        move.col,
                        move.created_at.isoformat(),
                    ]
                )
        return response


@admin.register(Block)
class BlockAdmin(admin.ModelAdmin):
    """Who blocked whom, read-only: a block is its blocker's own choice, made and
    lifted through games.services (which also moves the lobbies' cache keys)."""

    list_display = ["blocker", "blocked", "created_at"]
    list_select_related = ["blocker", "blocked"]
    search_fields = ["blocker__username", "blocked__username"]
    ordering = ["-created_at", "-id"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


User = get_user_model()


class PlayerWithRecordAdmin(PlayerAdmin):
    """accounts' user admin, with each player's game record (read-only)."""

    readonly_fields = [*PlayerAdmin.readonly_fields, "games_record"]
    fieldsets = [
        *PlayerAdmin.fieldsets,
        (gettext_lazy("Games"), {"fields": ["games_record"]}),
    ]

    @admin.display(description=gettext_lazy("Record"))
    def games_record(self, obj) -> str:
        if obj.pk is None:
            return "-"
        total = PlayerRecord.objects.record_of(obj).total
        streak = presentation.streak_text(PlayerResult.objects.streak(obj))
        summary = ngettext(
            "%(played)d played: %(won)d won, %(lost)d lost (%(forfeits)d by "
            "forfeit), %(drawn)d drawn. Current streak: %(streak)s.",
            "%(played)d played: %(won)d won, %(lost)d lost (%(forfeits)d by "
            "forfeit), %(drawn)d drawn. Current streak: %(streak)s.",
            total.played,
        ) % {
            "played": total.played,
            "won": total.wins,
            "lost": total.all_losses,
            "forfeits": total.forfeits,
            "drawn": total.draws,
            "streak": streak,
        }
        return format_html(
            '{} <a href="{}">{}</a>',
            summary,
            reverse("player_detail", args=[obj.get_username()]),
            gettext("Player page"),
        )


admin.site.unregister(User)
admin.site.register(User, PlayerWithRecordAdmin)
