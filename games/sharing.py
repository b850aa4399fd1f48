"""What a shared game says about itself: the Open Graph and Twitter tags of its
page (absolute addresses under DJANGO_SITE_URL, words in the reader's language:
a crawler's Accept-Language, else English), the words that name its position
(the pictures' `alt`), its text record, and its pictures, made once per game
version and then kept (caches["pictures"], per process: derived data only, the
same on every host)."""

import hashlib

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import caches
from django.urls import reverse
from django.utils.html import escape
from django.utils.translation import gettext, ngettext, pgettext

from . import pictures, presentation
from .models import Game


def absolute(path: str) -> str:
    return settings.SITE_URL + path


def preview_path(game: Game) -> str:
    """The preview image's address: it names the version, so that it changes
    with the board and each version's image can be kept for ever."""
    return reverse("game_preview", args=[game.pk, game.version])


def title(game: Game) -> str:
    """ "Game 7: alice vs bob — alice (X) wins!" (the result once over)."""
    x, o = (presentation.side_name(game.player_for(mark)) for mark in ("X", "O"))
    text = gettext("Game %(id)s: %(x)s vs %(o)s") % {"id": game.pk, "x": x, "o": o}
    if game.is_finished:
        return f"{text} — {presentation.result_text(game)}"
    return text


def description(game: Game) -> str:
    """Whose turn it is, or how it ended, as a spectator reads it."""
    return presentation.turn_text(game, AnonymousUser())


def position_text(
    game: Game, ply: int | None = None, *, rows=None, status: str | None = None
) -> str:
    """The board in words, for the pictures' `alt`: "Board after 2 moves:
    X: row 2, column 2; O: row 1, column 1." then whose turn or the result
    (`status`, if known already). `rows`: presentation.cells(game, ply), if
    made already."""
    marked = [
        presentation.mark_on_cell(cell.mark, cell.row, cell.col)
        for row in rows or presentation.cells(game, ply)
        for cell in row
        if cell.mark
    ]
    count = len(marked)
    if not marked:
        board = gettext("An empty board.")
    else:
        separator = pgettext("between the marked cells of a board", "; ")
        board = ngettext(
            "Board after %(count)s move: %(cells)s.",
            "Board after %(count)s moves: %(cells)s.",
            count,
        ) % {"count": count, "cells": separator.join(marked)}
    if ply is not None and ply != game.move_count:
        return board
    return presentation.sentences(board, status or description(game))


def page_parts(game: Game, rows) -> dict:
    """What a game page adds for sharing it (`rows`: its board's cells):
    `preview`, the values of its Open Graph and Twitter tags, and `share`,
    its Share section's links; each text made once."""
    page_title, status = title(game), description(game)
    url = absolute(game.get_absolute_url())
    preview = {
        "title": page_title,
        "description": status,
        "url": url,
        "image": absolute(preview_path(game)),
        "image_alt": position_text(game, rows=rows, status=status),
        "width": pictures.PREVIEW_SIZE[0],
        "height": pictures.PREVIEW_SIZE[1],
    }
    return {"preview": preview, "share": share_links(game, url, page_title)}


# The embed's frame: the board and its lines fit at 390 px wide.
EMBED_WIDTH, EMBED_HEIGHT = 360, 460


def share_links(game: Game, url: str, page_title: str) -> dict:
    """The game's address (`url`, titled `page_title`) and the <iframe>
    snippet that embeds it."""
    embed = absolute(reverse("game_embed", args=[game.pk]))
    frame_title = gettext("Game %(id)s on tictactoe") % {"id": game.pk}
    # Plain text (the page escapes it): the code a reader copies.
    snippet = (
        f'<iframe src="{escape(embed)}" width="{EMBED_WIDTH}" '
        f'height="{EMBED_HEIGHT}" title="{escape(frame_title)}" loading="lazy" '
        'style="border: 0"></iframe>'
    )
    return {"url": url, "title": page_title, "snippet": snippet}


def text_record(game: Game) -> str:
    """The moves as the page's move list names them, one a line, under the
    players and over the result: a plain-text file to keep."""
    lines = [title(game), ""]
    lines += [str(line) for line in presentation.move_lines(game)]
    lines += ["", description(game)]
    return "\n".join(lines) + "\n"


def _picture_key(kind: str, game: Game) -> str:
    """A picture is a function of the board, the moves, the result and the
    names: all in the key, so that a key never names another picture."""
    inputs = repr(
        (
            kind,
            game.pk,
            game.version,
            game.board,
            game.move_order,
            game.status,
            game.winning_line,
            [presentation.side_name(game.player_for(mark)) for mark in ("X", "O")],
        )
    )
    return hashlib.blake2b(inputs.encode(), digest_size=16).hexdigest()


def picture(kind: str, game: Game) -> bytes:
    """The `kind` ("preview" PNG or "moves" GIF) of `game`, drawn once per
    version and process."""
    store = caches["pictures"]
    key = _picture_key(kind, game)
    data = store.get(key)
    if data is None:
        draw = pictures.preview_png if kind == "preview" else pictures.moves_gif
        data = draw(game)
        store.set(key, data)
    return data
