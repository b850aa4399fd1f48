"""A game shared beyond its page: its preview image (og:image), the animated GIF
and the text record of a finished game's moves, and the embed, a board alone
that any site may frame and that follows the game live.

Each reads the game as its page does (Game.objects.for_page): a private game is
found by its players only, and a game not started yet by logged-in viewers only;
to anyone else each answers the 404 of a game that does not exist.
"""

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csp import csp_override

from tictactoe_site.lib.error_pages import error_page, get_only

from . import presentation, sharing
from .models import Game
from .refusals import GameNotFound, refusal_text

# A picture of one version never changes: kept a year by any cache, unless the
# game is private (then by the player's browser only).
FOREVER = "max-age=31536000, immutable"
# The files of a finished game change only with a player's shown name.
AN_HOUR = "max-age=3600"
# The embed may be framed by any site; every other page still refuses frames.
FRAMED_ANYWHERE = settings.SECURE_CSP | {"frame-ancestors": ["*"]}


def _shared_game(request, game_id: int) -> Game:
    try:
        game = Game.objects.for_page(game_id, request.user)
    except Game.DoesNotExist:
        game = None
    if game is None or game.hidden_from_visitor(request.user):
        raise Http404(refusal_text(GameNotFound()))
    return game


def _cache_control(game: Game, lifetime: str) -> str:
    return f"{'private' if game.is_private else 'public'}, {lifetime}"


@get_only
def preview(request, game_id: int, version: int):
    """The board of `version` as a PNG; an older version's address leads to
    the current one (a board past cannot be drawn again from the row)."""
    game = _shared_game(request, game_id)
    if version != game.version:
        response = redirect(sharing.preview_path(game))
        response["Cache-Control"] = "no-cache"
        return response
    response = HttpResponse(sharing.picture("preview", game), content_type="image/png")
    response["Cache-Control"] = _cache_control(game, FOREVER)
    return response


def _not_over(request) -> HttpResponse:
    return error_page(
        request,
        title=gettext("Not over yet"),
        message=gettext(
            "This game is still being played: its moves can be downloaded "
            "once it is over."
        ),
        status=409,
    )


def _download(game: Game, body, content_type: str, extension: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    name = f"tictactoe-game-{game.pk}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = _cache_control(game, AN_HOUR)
    return response


@get_only
def moves_gif(request, game_id: int):
    """A finished game's moves as an animated GIF: one frame a move."""
    game = _shared_game(request, game_id)
    if not game.is_finished:
        return _not_over(request)
    return _download(game, sharing.picture("moves", game), "image/gif", "gif")


@get_only
def moves_text(request, game_id: int):
    """A finished game's moves as text, named as the page names them."""
    game = _shared_game(request, game_id)
    if not game.is_finished:
        return _not_over(request)
    record = sharing.text_record(game)
    return _download(game, record, "text/plain; charset=utf-8", "txt")


def _embed_context(game: Game) -> dict:
    """The embed shows what a spectator sees, whoever frames it."""
    viewer = AnonymousUser()
    return {
        "game": game,
        "rows": presentation.cells(game),
        "turn_text": presentation.turn_text(game, viewer),
        "announcement": presentation.announcement(game, viewer),
        "position": sharing.position_text(game),
        "game_url": sharing.absolute(game.get_absolute_url()),
    }


@get_only
@xframe_options_exempt
@csp_override(FRAMED_ANYWHERE)
def embed(request, game_id: int):
    """The board alone, for another site's <iframe>: players, status, the
    board and a link to the game, kept live by static/games/live.js."""
    game = _shared_game(request, game_id)
    return render(request, "games/embed.html", _embed_context(game))


@get_only
@xframe_options_exempt
@csp_override(FRAMED_ANYWHERE)
def embed_live(request, game_id: int):
    """The embed's live part, which its script fetches on each new version."""
    game = _shared_game(request, game_id)
    response = render(request, "games/embed.html#live", _embed_context(game))
    response["Cache-Control"] = "no-store"
    return response
