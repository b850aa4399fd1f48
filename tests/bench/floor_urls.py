from django.urls import path

from . import floor_views

urlpatterns = [
    path("floor/<int:game_id>/", floor_views.board, name="floor_board"),
    path("floor/<int:game_id>/move/", floor_views.move, name="floor_move"),
    path(
        "floor/<int:game_id>/textbook-move/",
        floor_views.textbook_move,
        name="floor_textbook_move",
    ),
]
