"""How the games part words what people read, where one wording must serve
everywhere.

One way to name a cell, wherever people read one: "row 1, column 3".

Rows and columns count from 1 for people; the rules, the forms and state.json
keep the zero-based (row, col). A mark on a cell is "X: row 1, column 3" both in
the move list (and the replay's) and as the cell's own accessible name on the
board; the button of an empty cell and the live announcement name it with the
same "row 1, column 3". A test checks that they agree.

Sentences that follow one another ("bob played O in row 2, column 3." and "Your
turn.") are joined by `sentences`: the joining is the translation's business too.
"""

from django.utils.translation import gettext, pgettext


def cell_name(row: int, col: int) -> str:
    """ "row 2, column 3" for (1, 2)."""
    return gettext("row %(row)s, column %(column)s") % {
        "row": row + 1,
        "column": col + 1,
    }


def mark_on_cell(mark: str, row: int, col: int) -> str:
    """ "X: row 1, column 3": a move, and a taken cell's accessible name."""
    return pgettext("a mark on a board cell", "%(mark)s: %(cell)s") % {
        "mark": mark,
        "cell": cell_name(row, col),
    }


def empty_cell(row: int, col: int) -> str:
    """ "Empty: row 2, column 2": the accessible name of an empty cell."""
    return pgettext("a board cell", "Empty: %(cell)s") % {"cell": cell_name(row, col)}


def move_text(number: int, mark: str, row: int, col: int) -> str:
    """ "5. X: row 1, column 3": a line of the move list."""
    return pgettext("a numbered move", "%(number)s. %(move)s") % {
        "number": number,
        "move": mark_on_cell(mark, row, col),
    }


def sentences(*parts: str) -> str:
    """The non-empty `parts`, each a whole sentence, one after the other."""
    text, *rest = [part for part in parts if part]
    for part in rest:
        text = pgettext("one sentence after another", "%(first)s %(next)s") % {
            "first": text,
            "next": part,
        }
    return text
