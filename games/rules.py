"""Tic-Tac-Toe itself, as pure Python: the single source of game truth.

No Django import here (a test checks it): models, services and views ask this
module what is legal and what the outcome is, and never re-implement a rule.

Names for a game's status: `Status` here is the game as the rules see it
(running, won, drawn, forfeited, aborted). `games.choices.GameStatus` is the
stored column: these same values plus `waiting` (an open game nobody has joined,
which the rules see as an empty running board). Nothing else names a status.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


def gettext_noop(message: str) -> str:
    """Marks `message` for the translation catalogs (makemessages looks for this
    name) and returns it unchanged: this module imports no Django, so the layer
    that shows a refusal translates it (games.refusals.refusal_text)."""
    return message


SIZE = 3
CELLS = SIZE * SIZE
EMPTY = "-"

# The 8 lines, as cell indices (row * 3 + col): 3 rows, 3 columns, 2 diagonals.
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)


class Mark(StrEnum):
    X = "X"
    O = "O"  # noqa: E741

    @property
    def other(self) -> Mark:
        return Mark.O if self is Mark.X else Mark.X


class Status(StrEnum):
    IN_PROGRESS = "in_progress"
    X_WON = "x_won"
    O_WON = "o_won"
    DRAW = "draw"
    X_FORFEITS = "x_forfeits"
    O_FORFEITS = "o_forfeits"
    # Ended by a player before both sides had moved: no result for anybody.
    ABORTED = "aborted"

    @property
    def is_over(self) -> bool:
        return self is not Status.IN_PROGRESS

    @property
    def has_result(self) -> bool:
        """Over with a result (win, loss, draw) that records and series count."""
        return self.is_over and self is not Status.ABORTED

    @property
    def winner(self) -> Mark | None:
        return _WINNERS.get(self)

    @property
    def is_forfeit(self) -> bool:
        """Ended because a player gave up on their turn."""
        return self in _FORFEITERS


def statuses_won_by(mark: Mark) -> list[Status]:
    """Every status in which `mark`'s player wins: on the board or by forfeit."""
    return [status for status, winner in _WINNERS.items() if winner is mark]


_WINNERS = {
    Status.X_WON: Mark.X,
    Status.O_WON: Mark.O,
    Status.X_FORFEITS: Mark.O,
    Status.O_FORFEITS: Mark.X,
}
_FORFEITERS = {Status.X_FORFEITS: Mark.X, Status.O_FORFEITS: Mark.O}

# Either player may abort a game until this many moves have been played (the
# lichess rule: until each side has moved once).
ABORTABLE_BELOW_MOVES = 2


def to_move(move_count: int) -> Mark:
    """Whose turn it is after `move_count` moves: X moves first, then they alternate."""
    return Mark.X if move_count % 2 == 0 else Mark.O


def move_counts_to_move(mark: Mark) -> tuple[int, ...]:
    """Every move count (0..8) at which `mark` is to move: `to_move` as a set, for
    queries that ask "whose turn" of many games at once (games.models)."""
    return tuple(count for count in range(CELLS) if to_move(count) is mark)


def moves_before_first(mark: Mark) -> int:
    """How many moves are on the board when `mark` makes its first move: a side
    "has not moved yet" while the move count is at most this."""
    return move_counts_to_move(mark)[0]


class Outcome(StrEnum):
    """How a finished game went for one side. A forfeit is a loss, kept apart
    so that records can show it as such."""

    WIN = "win"
    LOSS = "loss"
    DRAW = "draw"
    FORFEIT = "forfeit"


def outcome_for(status: Status, mark: Mark) -> Outcome:
    """The result of a finished game for the player of `mark`."""
    if not status.has_result:
        raise ValueError(f"game has no result: {status}")
    if status is Status.DRAW:
        return Outcome.DRAW
    if status.winner is mark:
        return Outcome.WIN
    return Outcome.FORFEIT if _FORFEITERS.get(status) is mark else Outcome.LOSS


class Rejected(Exception):
    """Base of every reason an action is refused; `message` is for people."""

    message = gettext_noop("That is not allowed.")

    def __init__(self, message: str | None = None):
        super().__init__(message or self.message)
        if message:
            self.message = message


class MoveRejected(Rejected):
    message = gettext_noop("That move is not allowed.")


class OutsideBoard(MoveRejected):
    message = gettext_noop("That cell is outside the board.")


class CellOccupied(MoveRejected):
    message = gettext_noop("That cell is already taken.")


class GameOver(MoveRejected):
    message = gettext_noop("The game is over: no more moves can be made.")


class NotYourTurn(MoveRejected):
    message = gettext_noop("It is not your turn.")


class TooLateToAbort(Rejected):
    message = gettext_noop(
        "Two moves have been played: finish the game or forfeit on your turn."
    )


def cell_index(row: int, col: int) -> int:
    """Index of (row, col) in the board string; raises OutsideBoard for a bad cell."""
    if not (
        isinstance(row, int)
        and isinstance(col, int)
        and 0 <= row < SIZE
        and 0 <= col < SIZE
    ):
        raise OutsideBoard()
    return row * SIZE + col


def cell_of(index: int) -> tuple[int, int]:
    return divmod(index, SIZE)


@dataclass(frozen=True, slots=True)
class Board:
    """An immutable 3×3 board: 9 cells, each "X", "O" or EMPTY, row by row."""

    cells: str = EMPTY * CELLS

    def __post_init__(self):
        if len(self.cells) != CELLS or set(self.cells) - {Mark.X, Mark.O, EMPTY}:
            raise ValueError(f"not a board: {self.cells!r}")
        if self.cells.count(Mark.X) - self.cells.count(Mark.O) not in (0, 1):
            raise ValueError(f"impossible board (X moves first): {self.cells!r}")

    @classmethod
    def from_moves(cls, moves: list[tuple[int, int]]) -> Board:
        """Replay (row, col) moves from the empty board, enforcing every rule."""
        board = cls()
        for row, col in moves:
            board = board.play(row, col)
        return board

    def __getitem__(self, cell: tuple[int, int]) -> Mark | None:
        value = self.cells[cell_index(*cell)]
        return None if value == EMPTY else Mark(value)

    def rows(self) -> list[list[Mark | None]]:
        return [[self[row, col] for col in range(SIZE)] for row in range(SIZE)]

    @property
    def move_count(self) -> int:
        return CELLS - self.cells.count(EMPTY)

    @property
    def is_full(self) -> bool:
        return EMPTY not in self.cells

    @property
    def next_mark(self) -> Mark:
        return to_move(self.move_count)

    @property
    def winning_line(self) -> int | None:
        """Index into LINES of the completed line, or None."""
        for number, (a, b, c) in enumerate(LINES):
            if (
                self.cells[a] != EMPTY
                and self.cells[a] == self.cells[b] == self.cells[c]
            ):
                return number
        return None

    @property
    def status(self) -> Status:
        """Outcome of the board alone: a line wins, else a full board is a draw."""
        line = self.winning_line
        if line is not None:
            return (
                Status.X_WON if self.cells[LINES[line][0]] == Mark.X else Status.O_WON
            )
        return Status.DRAW if self.is_full else Status.IN_PROGRESS

    def play(self, row: int, col: int, *, mark: Mark | None = None) -> Board:
        """The board after `mark` (default: whoever is to move) takes (row, col)."""
        index = cell_index(row, col)
        if self.status.is_over:
            raise GameOver()
        if mark is not None and mark != self.next_mark:
            raise NotYourTurn()
        if self.cells[index] != EMPTY:
            raise CellOccupied()
        cells = self.cells[:index] + self.next_mark + self.cells[index + 1 :]
        return Board(cells)


def line_cells(line: int | None) -> list[tuple[int, int]] | None:
    """The three (row, col) cells of line number `line`."""
    return None if line is None else [cell_of(index) for index in LINES[line]]


@dataclass(frozen=True, slots=True)
class GameState:
    """A board plus the game's status, which a forfeit can end early."""

    board: Board = Board()
    status: Status = Status.IN_PROGRESS

    def __post_init__(self):
        board_status = self.board.status
        if board_status.is_over and self.status != board_status:
            raise ValueError(f"status {self.status} contradicts the board")
        if not board_status.is_over and self.status not in (
            Status.IN_PROGRESS,
            Status.X_FORFEITS,
            Status.O_FORFEITS,
            Status.ABORTED,
        ):
            raise ValueError(f"status {self.status} contradicts the board")
        if (
            self.status is Status.ABORTED
            and self.board.move_count >= ABORTABLE_BELOW_MOVES
        ):
            raise ValueError(f"a game with {self.board.move_count} moves cannot abort")

    @property
    def winner(self) -> Mark | None:
        return self.status.winner

    @property
    def winning_line(self) -> int | None:
        return self.board.winning_line

    def play(self, row: int, col: int, *, mark: Mark | None = None) -> GameState:
        cell_index(row, col)
        if self.status.is_over:
            raise GameOver()
        board = self.board.play(row, col, mark=mark)
        return GameState(board, board.status)

    def forfeit(self, mark: Mark) -> GameState:
        """The opponent wins at once; allowed only on `mark`'s own turn."""
        if self.status.is_over:
            raise GameOver(
                gettext_noop("The game is over: there is nothing left to forfeit.")
            )
        if mark != self.board.next_mark:
            raise NotYourTurn(gettext_noop("You can only forfeit on your own turn."))
        status = Status.X_FORFEITS if mark is Mark.X else Status.O_FORFEITS
        return GameState(self.board, status)

    @property
    def can_abort(self) -> bool:
        """Either player may abort until both sides have moved."""
        return not self.status.is_over and self.board.move_count < ABORTABLE_BELOW_MOVES

    def abort(self) -> GameState:
        """The game ends with no result; allowed to either player (on any turn)
        until both sides have moved."""
        if self.status.is_over:
            raise GameOver(
                gettext_noop("The game is over: there is nothing left to abort.")
            )
        if not self.can_abort:
            raise TooLateToAbort()
        return GameState(self.board, Status.ABORTED)
