"""A game drawn as pictures with Pillow: the preview image of its board as it
stands (og:image, PNG) and the animated GIF of its moves, one frame a move.

The pictures carry no words but the players' names (which no language
translates), so one picture serves every language; the pages' `alt` texts say
the position in words (games.sharing). No font file is bundled: DejaVu Sans from
the system where it is installed, else Pillow's own scalable default font.
"""

import functools
import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from . import rules
from .choices import GameStatus
from .models import Game
from .presentation import board_at, side_name

# The size link previews ask for (Open Graph's 1.91:1, "summary_large_image").
PREVIEW_SIZE = (1200, 630)
GIF_SIZE = 480
# Milliseconds a frame of the GIF shows; the last one holds longer.
FRAME_MS, LAST_FRAME_MS = 800, 3000

BACKGROUND = (250, 250, 252)
INK = (31, 41, 55)
MUTED = (107, 114, 128)
GRID = (156, 163, 175)
X_COLOUR = (190, 30, 45)
O_COLOUR = (29, 78, 216)
WIN_COLOUR = (22, 163, 74)
MARK_COLOURS = {"X": X_COLOUR, "O": O_COLOUR}

# Where Debian and most Linux systems keep DejaVu (package fonts-dejavu-core).
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
NAME_LENGTH = 18  # characters of a name shown before "…"


@functools.cache
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if DEJAVU.exists():
        return ImageFont.truetype(str(DEJAVU), size)
    return ImageFont.load_default(size=size)


def _short(name: str) -> str:
    return name if len(name) <= NAME_LENGTH else name[: NAME_LENGTH - 1] + "…"


def draw_board(
    draw: ImageDraw.ImageDraw,
    origin: tuple[int, int],
    size: int,
    board: rules.Board,
    winning_line: int | None,
) -> None:
    """The 3×3 grid at `origin` (its top left), `size` pixels wide, its marks,
    and a stroke through the winning line."""
    left, top = origin
    cell = size / rules.SIZE
    width = max(2, size // 60)
    for step in (1, 2):
        offset = round(step * cell)
        draw.line([(left + offset, top), (left + offset, top + size)], GRID, width)
        draw.line([(left, top + offset), (left + size, top + offset)], GRID, width)
    pad = cell * 0.22
    stroke = max(3, size // 28)
    for row, marks in enumerate(board.rows()):
        for col, mark in enumerate(marks):
            if mark is None:
                continue
            x0, y0 = left + col * cell + pad, top + row * cell + pad
            x1, y1 = left + (col + 1) * cell - pad, top + (row + 1) * cell - pad
            colour = MARK_COLOURS[mark.value]
            if mark is rules.Mark.X:
                draw.line([(x0, y0), (x1, y1)], colour, stroke)
                draw.line([(x0, y1), (x1, y0)], colour, stroke)
            else:
                draw.ellipse([(x0, y0), (x1, y1)], outline=colour, width=stroke)
    cells = rules.line_cells(winning_line)
    if cells:
        (row0, col0), (row1, col1) = cells[0], cells[-1]
        centre = [
            (left + (col + 0.5) * cell, top + (row + 0.5) * cell)
            for row, col in ((row0, col0), (row1, col1))
        ]
        draw.line(centre, WIN_COLOUR, stroke + 4)


def _score(game: Game) -> str | None:
    """ "1 – 0", "0 – 1", "½ – ½": the result as numbers (no words to
    translate); None while the game runs or after an abort."""
    if game.status == GameStatus.DRAW:
        return "½ – ½"
    winner = game.winner_mark
    if winner is None:
        return None
    return "1 – 0" if winner == "X" else "0 – 1"


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()


def preview_png(game: Game) -> bytes:
    """The board as it stands, the players' names beside it (the one to move
    marked with a dot), the result as a score once it is over."""
    image = Image.new("RGB", PREVIEW_SIZE, BACKGROUND)
    draw = ImageDraw.Draw(image)
    board_size = 510
    draw_board(draw, (60, 60), board_size, game.rules_board, game.winning_line)
    to_move = game.next_mark
    x_text = 640
    for index, mark in enumerate(("X", "O")):
        top = 150 + index * 120
        colour = MARK_COLOURS[mark]
        draw.text((x_text, top), mark, colour, font(72))
        name = _short(side_name(game.player_for(mark)))
        draw.text((x_text + 80, top + 14), name, INK, font(48))
        if to_move == mark:
            draw.ellipse([(x_text - 36, top + 30), (x_text - 12, top + 54)], colour)
    score = _score(game)
    if score is not None:
        draw.text((x_text, 420), score, INK, font(80))
    draw.text((x_text, 560), "tictactoe", MUTED, font(28))
    return _png(image)


def _frame(game: Game, ply: int, last: bool) -> Image.Image:
    image = Image.new("RGB", (GIF_SIZE, GIF_SIZE + 60), BACKGROUND)
    draw = ImageDraw.Draw(image)
    x_name, o_name = (_short(side_name(game.player_for(mark))) for mark in ("X", "O"))
    draw.text((20, 16), f"X {x_name}", X_COLOUR, font(24))
    draw.text((GIF_SIZE - 20, 16), f"{o_name} O", O_COLOUR, font(24), anchor="ra")
    line = game.winning_line if last else None
    draw_board(draw, (30, 80), GIF_SIZE - 60, board_at(game, ply), line)
    return image.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)


def moves_gif(game: Game) -> bytes:
    """The game move by move: the empty board, then one frame a move, the last
    (with the winning line) held longer; looping."""
    count = game.move_count
    frames = [_frame(game, ply, ply == count) for ply in range(count + 1)]
    out = io.BytesIO()
    frames[0].save(
        out,
        "GIF",
        save_all=True,
        append_images=frames[1:],
        duration=[FRAME_MS] * count + [LAST_FRAME_MS],
        loop=0,
        optimize=True,
    )
    return out.getvalue()
