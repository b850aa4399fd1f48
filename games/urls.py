from django.urls import path

from . import guest_views, sharing_views, views

urlpatterns = [
    path("", views.lobby, name="lobby"),
    path("lobby/live/", views.lobby_live, name="lobby_live"),
    # Placeholder for {% url %}: the stream is games.live.streams (via asgi).
    path("lobby/events/", views.stream_placeholder, name="lobby_events"),
    path("games/new/", views.new_game, name="new_game"),
    path("games/archive/", views.archive, name="archive"),
    path("players/<str:username>/", views.player_detail, name="player_detail"),
    path("players/<str:username>/block/", views.block_player, name="block_player"),
    path(
        "players/<str:username>/unblock/",
        views.unblock_player,
        name="unblock_player",
    ),
    path(
        "invitations/<int:game_id>/<str:secret>/",
        views.invitation,
        name="invitation",
    ),
    path(
        "invitations/<int:game_id>/<str:secret>/join/",
        views.invitation_join,
        name="invitation_join",
    ),
    path(
        "invitations/<int:game_id>/<str:secret>/guest/",
        views.invitation_guest,
        name="invitation_guest",
    ),
    path("games/<int:game_id>/", views.game_detail, name="game_detail"),
    path("games/<int:game_id>/state.json", views.game_state, name="game_state"),
    path("games/<int:game_id>/live/", views.game_live, name="game_live"),
    # Placeholder for {% url %}: the stream is games.live.streams (via asgi).
    path(
        "games/<int:game_id>/events/",
        views.stream_placeholder,
        name="game_events",
    ),
    path(
        "games/<int:game_id>/preview/<int:version>.png",
        sharing_views.preview,
        name="game_preview",
    ),
    path("games/<int:game_id>/moves.gif", sharing_views.moves_gif, name="moves_gif"),
    path("games/<int:game_id>/moves.txt", sharing_views.moves_text, name="moves_text"),
    path("games/<int:game_id>/embed/", sharing_views.embed, name="game_embed"),
    path(
        "games/<int:game_id>/embed/live/",
        sharing_views.embed_live,
        name="game_embed_live",
    ),
    path("games/<int:game_id>/move/", views.play_move, name="play_move"),
    path("games/<int:game_id>/join/", views.join_game, name="join_game"),
    path(
        "games/<int:game_id>/guest/",
        guest_views.join_game_as_guest,
        name="join_game_as_guest",
    ),
    path("games/<int:game_id>/private/", views.set_privacy, name="set_privacy"),
    path("games/<int:game_id>/forfeit/", views.forfeit_game, name="forfeit_game"),
    path("games/<int:game_id>/abort/", views.abort_game, name="abort_game"),
    path("games/<int:game_id>/rematch/", views.rematch, name="rematch"),
]
