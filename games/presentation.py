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
    # The mark a move here would place: None on a board no one can move on.
    next_mark: str | None = None

    @property
    def label(self) -> str:
        """What a screen reader says of a cell that is not a button: "Row 1,
        column 2: O" (1-based for people)."""
        return f"{_cell_text(self.row, self.col).capitalize()}: {self.mark or 'empty'}"

    @property
    def button_label(self) -> str:
        """The name of an empty cell's button: "Place X in row 1, column 2"."""
        return f"Place {self.next_mark} in {_cell_text(self.row, self.col)}"


def _cell_text(row: int, col: int) -> str:
    """ "row 2, column 3" for (1, 2): rows and columns count from 1 for people."""
    return f"row {row + 1}, column {col + 1}"


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
    next_mark = game.next_mark if shown == game.move_count else None
    return [
        [
            Cell(
                row,
                col,
                mark.value if mark else None,
                (row, col) in winning,
                (row, col) == last,
                next_mark,
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
    if _is_viewer(user, viewer):
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


def _ended_by_a_move(game: Game) -> bool:
    """Won on the board or drawn: the last move ended it (not a forfeit or abort)."""
    if game.is_waiting:
        return False
    status = rules.Status(game.status)
    return status.has_result and not status.is_forfeit


def _is_viewer(user, viewer) -> bool:
    return viewer is not None and user is not None and user.pk == viewer.pk


def _subject(user, viewer) -> str:
    """ "You" to `user` themselves, else their name: a sentence's subject."""
    return "You" if _is_viewer(user, viewer) else name(user)


def announcement(game: Game, viewer) -> str:
    """What the game page's live region says once a change arrives: the latest
    move, then what follows ("bob played O in row 2, column 3. Your turn.")."""
    if not game.move_count or not (game.is_in_progress or _ended_by_a_move(game)):
        return turn_text(game, viewer)  # waiting, a forfeit, an abort, no move yet
    mark = rules.to_move(game.move_count - 1)
    row, col = game.played_cells[-1]
    played = (
        f"{_subject(game.player_for(mark.value), viewer)} played {mark.value}"
        f" in {_cell_text(row, col)}."
    )
    if game.is_in_progress:
        return f"{played} {turn_text(game, viewer)}"
    winner = game.winner_mark
    if winner is None:
        return f"{played} Draw."
    if game.is_self_play:
        return f"{played} {winner} won."
    return f"{played} {_subject(game.player_for(winner), viewer)} won."


@dataclass(frozen=True, slots=True)
class TurnNotice:
    """A system notification for a player whose page is hidden (static/games/
    notify.js). `key` names the change, the same in every tab and on the lobby
    and the game page, so that one tab shows it; `tag` is one per game, so a
    newer notification of a game replaces the older one on screen."""

    key: str
    tag: str
    title: str
    body: str


def turn_notice(game: Game, viewer) -> TurnNotice | None:
    """The notification `viewer` gets for the game as it is now, if its latest
    change is one they wait for: their opponent started it against them, or
    moved (it is `viewer`'s turn, or the move ended the game). None for anything
    `viewer` did themselves, for spectators and for self-play.

    Reads only the lobby's columns of the game (models.GAME_ROW_FIELDS)."""
    marks = game.marks_for(viewer)
    if len(marks) != 1 or not game.has_both_players:
        return None
    mine = rules.Mark(marks[0])
    opponent = game.player_for(mine.other.value)
    count = game.move_count
    if game.is_in_progress:
        yours = game.is_turn_of(viewer)
        # As the lobby's "New" (models.GameQuerySet.for_lobby): started by the
        # opponent, and `viewer` has not moved yet.
        new = game.created_by_id == opponent.pk
        if new and count <= rules.moves_before_first(mine):
            body = f"{name(opponent)} started a game against you."
            body += " Your turn." if yours else ""
        elif yours and count:
            body = f"{name(opponent)} has moved. Your turn."
        else:
            return None
    elif _ended_by_a_move(game) and rules.to_move(count - 1) is mine.other:
        body = "Draw." if game.winner_mark is None else f"{name(opponent)} won."
    else:
        return None
    return TurnNotice(
        key=f"game-{game.pk}-{count}",
        tag=f"game-{game.pk}",
        title=f"Game {game.pk} against {name(opponent)}",
        body=body,
    )


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
