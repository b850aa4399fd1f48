"""Draws the installed app's icons (static/games/icon-*.png, linked by the web
app manifest) from the favicon's design: a grid, two X and an O. Run once
after changing the design and commit the PNGs:

    .venv/bin/python -m tests.support.app_icons
"""

from pathlib import Path

from PIL import Image, ImageDraw

STATIC = Path(__file__).resolve().parents[2] / "static" / "games"
# The palette of static/games/app.css (light): page, ink, X, O.
PAPER, INK, X_MARK, O_MARK = "#ffffff", "#1b1f24", "#b3261e", "#0b5cad"
# Drawn this many times larger, then scaled down: smooth edges.
SUPERSAMPLE = 4


def draw(size: int, *, maskable: bool) -> Image.Image:
    """The icon at `size` px. A maskable icon fills its square and keeps its
    drawing inside the middle 80 % circle (the safe zone a launcher's mask
    never cuts); the other has rounded corners and a transparent outside."""
    big = size * SUPERSAMPLE
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    if maskable:
        pen.rectangle((0, 0, big, big), fill=PAPER)
        # The board's square inscribed in the safe circle, with a margin.
        board = big * 0.8 / 2**0.5 * 0.92
    else:
        pen.rounded_rectangle((0, 0, big - 1, big - 1), radius=big * 0.19, fill=PAPER)
        board = big * 0.84
    start = (big - board) / 2
    cell = board / 3
    grid = max(1, round(board * 0.06))
    for i in (1, 2):
        at = start + i * cell
        pen.line((at, start, at, start + board), fill=INK, width=grid)
        pen.line((start, at, start + board, at), fill=INK, width=grid)
    mark = round(board * 0.075)
    inset = cell * 0.22

    def cross(column: int, row: int) -> None:
        left, top = start + column * cell + inset, start + row * cell + inset
        right, bottom = left + cell - 2 * inset, top + cell - 2 * inset
        for line in ((left, top, right, bottom), (left, bottom, right, top)):
            pen.line(line, fill=X_MARK, width=mark)
            for x, y in (line[:2], line[2:]):  # round caps
                pen.ellipse(
                    (x - mark / 2, y - mark / 2, x + mark / 2, y + mark / 2),
                    fill=X_MARK,
                )

    cross(0, 0)
    cross(2, 2)
    centre, radius = start + 1.5 * cell, cell / 2 - inset * 0.8
    pen.ellipse(
        (centre - radius, centre - radius, centre + radius, centre + radius),
        outline=O_MARK,
        width=round(mark * 0.8),
    )
    return image.resize((size, size), Image.Resampling.LANCZOS)


ICONS = {
    "icon-192.png": (192, False),
    "icon-512.png": (512, False),
    "icon-maskable-512.png": (512, True),
}


def main() -> None:
    for name, (size, maskable) in ICONS.items():
        image = draw(size, maskable=maskable)
        if maskable:
            image = image.convert("RGB")  # fills its square: no alpha needed
        image.save(STATIC / name, optimize=True)
        print(STATIC / name)


if __name__ == "__main__":
    main()
