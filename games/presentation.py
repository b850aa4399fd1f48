"""What a viewer sees of a game: plain values for the templates and state.json.

Everything here is read from the one Game row (players and series joined), so a
game page costs one query; the rules module answers every question of the game.
"""

from dataclasses import dataclass

from . import rules
from .models import Game, GameStatus, PlayerResult, ResultOutcome, display_name
from .records import Streak


@dataclass(frozen=True, slots=True)
class Cell:
    row: int
    col: int
    mark: str | None
    in_winning_line: bool
    is_last_move: bool

    @property
    def label(self) -> str:
        """What a screen reader says: "row 1, column 2, empty" (1-based for people)."""
        return f"row {self.row + 1}, column {self.col + 1}, {self.mark or 'empty'}"


@dataclass(frozen=True, slots=True)
class MoveLine:
    sequence_number: int
    player: str
    row: int
    col: int

    def __str__(self) -> str:
        return f"{self.sequence_number}. {self.player} ({self.row}, {self.col})"


def move_lines(game: Game, upto: int | None = None) -> list[MoveLine]:
    cells = game.played_cells[:upto]
    return [
        MoveLine(number, "X" if number % 2 else "O", row, col)
        for number, (row, col) in enumerate(cells, start=1)
    ]


def board_at(game: Game, ply: int | None = None) -> rules.Board:
    """The board after `ply` moves (the current board when None)."""
    if ply is None or ply == game.move_count:
        return game.rules_board
    return rules.Board.from_moves(game.played_cells[:ply])


def cells(game: Game, ply: int | None = None) -> list[list[Cell]]:
    board = board_at(game, ply)
    line = board.winning_line if game.winning_line is not None else None
    winning = set(rules.line_cells(line) or [])
    shown = game.move_count if ply is None else ply
    last = game.played_cells[shown - 1] if shown else None
    return [
        [
            Cell(
                row,
                col,
                mark.value if mark else None,
                (row, col) in winning,
                (row, col) == last,
            )
            for col, mark in enumerate(marks)
        ]
        for row, marks in enumerate(board.rows())
    ]


def name(user) -> str:
    return display_name(user) if user is not None else ""


def username(user) -> str | None:
    """The plain username (an identifier, as in state.json), None for nobody."""
    return user.get_username() if user is not None else None


def move_json(move) -> dict:
    """One move as JSON (state.json and the admin's export): a Move row or a
    MoveLine, which name their fields alike."""
    return {
        "sequence_number": move.sequence_number,
        "player": move.player,
        "row": move.row,
        "col": move.col,
    }


def _you_or_name(user, viewer) -> str:
    if viewer is not None and user is not None and user.pk == viewer.pk:
        return "you"
    return name(user)


def lobby_text(game: Game, viewer) -> str:
    """A game's line in `viewer`'s lobby: new games say who started them."""
    if getattr(game, "is_new", False):
        return f"{name(game.created_by_player)} started a game against you."
    return turn_text(game, viewer)


def turn_text(game: Game, viewer) -> str:
    """One line that says what happens next, from the viewer's side."""
    if game.is_waiting:
        if game.is_player(viewer):
            return "Waiting for an opponent to join. Share this page's address."
        return "This game is open: join it to play."
    if game.is_in_progress:
        mark = game.next_mark
        if game.is_turn_of(viewer):
            text = f"Your turn ({mark})." if game.is_self_play else "Your turn."
        else:
            text = f"Waiting for {name(game.player_for(mark))} ({mark})."
        return text + _left_text(game)
    return result_text(game, viewer)


def _left_text(game: Game) -> str:
    """ " bob has left: they closed their account." for a game that stays."""
    gone = [p for p in (game.player_x, game.player_o) if not p.is_active]
    if not gone:
        return ""
    return f" {gone[0].get_username()} has left: they closed their account."


def aborted_text(game: Game, viewer=None) -> str:
    """ "Aborted by alice." ("by you" to alice herself)."""
    aborter = game.player_for_id(game.aborted_by_id)
    return f"Aborted by {_you_or_name(aborter, viewer)}."


def result_text(game: Game, viewer=None) -> str:
    status = game.status
    if status == GameStatus.ABORTED:
        return aborted_text(game, viewer)
    if status == GameStatus.DRAW:
        return "Draw."
    winner = game.winner_mark
    loser = rules.Mark(winner).other.value
    if game.is_self_play:
        subject = f"{winner} wins"
    elif viewer is not None and viewer.is_authenticated:
        if game.player_for(winner).pk == viewer.pk:
            subject = "You win"
        else:
            subject = f"{name(game.player_for(winner))} ({winner}) wins"
    else:
        subject = f"{name(game.player_for(winner))} ({winner}) wins"
    if rules.Status(status).is_forfeit:
        return f"{subject}: {name(game.player_for(loser))} ({loser}) forfeited."
    return f"{subject}!"


def series_text(game: Game) -> str | None:
    """ "alice 3 – 2 bob, 1 draw" from X's player's side; None for self-play."""
    score = game.series_score
    if score is None or game.is_self_play:
        return None
    x_wins, o_wins, draws = score
    return score_text(game.player_x, x_wins, o_wins, draws, game.player_o)


def snapshot(game: Game) -> dict:
    """The read-only JSON snapshot; field names are a public contract (README)."""
    line = game.winning_cells
    return {
        "id": game.pk,
        "status": game.status,
        "current_player": game.next_mark,
        "winner": game.winner_mark,
        "winning_line": [list(cell) for cell in line] if line else None,
        "player_x": username(game.player_x),
        "player_o": username(game.player_o),
        "ply": game.move_count,
        "version": game.version,
        "board": [
            [cell.value if cell else None for cell in row]
            for row in game.rules_board.rows()
        ],
        "moves": [move_json(move) for move in move_lines(game)],
    }


def score_text(first, first_wins: int, second_wins: int, draws: int, second) -> str:
    """ "alice 3 – 2 bob, 1 draw"."""
    draws_text = f", {draws} draw{'s' if draws != 1 else ''}" if draws else ""
    return f"{name(first)} {first_wins} – {second_wins} {name(second)}{draws_text}"


def outcome_text(result: PlayerResult, viewer=None) -> str:
    """A finished game from its player's side: "Won as X (bob forfeited)".
    `viewer` is who reads it: someone else's self-play is "against themselves"."""
    game = result.game
    if result.outcome == ResultOutcome.ABORTED:
        return aborted_text(game, viewer)
    if result.outcome == ResultOutcome.SELF_PLAY:
        own = viewer is not None and viewer.pk == result.player_id
        return f"Against {'yourself' if own else 'themselves'} — {result_text(game)}"
    label = ResultOutcome(result.outcome).label
    text = f"{label} as {result.mark}"
    if result.outcome == ResultOutcome.WIN and rules.Status(game.status).is_forfeit:
        text += f" ({name(result.opponent)} forfeited)"
    return text


def streak_text(streak: Streak) -> str:
    if not streak.length:
        return "none yet"
    noun = {"win": "win", "loss": "loss", "draw": "draw"}[streak.kind]
    plural = "es" if noun == "loss" else "s"
    return f"{streak.length} {noun}{plural if streak.length != 1 else ''} in a row"


@dataclass(frozen=True, slots=True)
class ReplayNav:
    """Where ?ply=N links point: None where the link would go nowhere."""

    ply: int
    last: int

    @property
    def first_ply(self) -> int | None:
        return 0 if self.ply > 0 else None

    @property
    def previous_ply(self) -> int | None:
        return self.ply - 1 if self.ply > 0 else None

    @property
    def next_ply(self) -> int | None:
        return self.ply + 1 if self.ply < self.last else None

    @property
    def last_ply(self) -> int | None:
        return self.last if self.ply < self.last else None
