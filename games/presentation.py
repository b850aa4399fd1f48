"""What a viewer sees of a game: plain values for the templates and state.json.

Everything here is read from the one Game row (players and series joined), so a
game page costs one query; the rules module answers every question of the game.

Every text is in the active language (gettext at call time, never at import):
the page cache keys each rendering by language (games.page_cache).

One way to name a cell, wherever people read one: "row 1, column 3". Rows and
columns count from 1 for people; the rules, the forms and state.json keep the
zero-based (row, col). A mark on a cell is "X: row 1, column 3" both in the
move list (and the replay's) and as the cell's own accessible name on the
board; the button of an empty cell and the live announcement name it with the
same "row 1, column 3". Sentences that follow one another ("bob played O in
row 2, column 3." and "Your turn.") are joined by `sentences`: the joining is
the translation's business too.
"""

from dataclasses import dataclass

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext, pgettext

from accounts.guests import is_guest

from . import rules
from .choices import GameStatus, ResultOutcome
from .models import Game, PlayerResult
from .player_stats import Streak

# -- words -------------------------------------------------------------------


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
    def style(self) -> str:
        """The cell's CSS class suffix (mark-x, mark-o, mark-none): no words."""
        return self.mark.lower() if self.mark else "none"

    @property
    def label(self) -> str:
        """What a screen reader says of a cell that is not a button, as the move
        list names the move: "O: row 1, column 2", "Empty: row 2, column 2";
        ", winning line" after a cell of the winning line."""
        if self.mark:
            text = mark_on_cell(self.mark, self.row, self.col)
        else:
            text = empty_cell(self.row, self.col)
        if self.in_winning_line:
            text = gettext("%(cell)s, winning line") % {"cell": text}
        return text

    @property
    def button_label(self) -> str:
        """The name of an empty cell's button: "Place X in row 1, column 2"."""
        return gettext("Place %(mark)s in %(cell)s") % {
            "mark": self.next_mark,
            "cell": cell_name(self.row, self.col),
        }


@dataclass(frozen=True, slots=True)
class MoveLine:
    sequence_number: int
    player: str
    row: int
    col: int

    def __str__(self) -> str:
        """ "5. X: row 1, column 3"."""
        return move_text(self.sequence_number, self.player, self.row, self.col)


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


def display_name(user) -> str:
    """A player's name as pages show it: "alice", "alice (closed)" once the
    account is closed (closing makes the user inactive; games.services), and
    "bob (guest)" or "bob (closed guest)" for a guest (accounts.guests), so
    that nobody passes for an account holder. The pages load each player with
    their guest row (games.field_lists.with_guest): no query here."""
    name = user.get_username()
    if is_guest(user):
        if user.is_active:
            return gettext("%(name)s (guest)") % {"name": name}
        return gettext("%(name)s (closed guest)") % {"name": name}
    if user.is_active:
        return name
    return gettext("%(name)s (closed)") % {"name": name}


def open_side() -> str:
    """ "(open)": what names a side nobody has taken yet."""
    return pgettext("a side nobody has taken", "(open)")


def name(user) -> str:
    return display_name(user) if user is not None else ""


def side_name(user) -> str:
    """A side of a game: its player's name, or "(open)" while nobody took it."""
    return display_name(user) if user is not None else open_side()


def player_link(user) -> SafeString:
    """The name linked to the player's page; "(open)" for None (a free side).
    No newline around it: the link sits inside sentences."""
    if user is None:
        return format_html("{}", open_side())
    return format_html(
        '<a href="{}">{}</a>',
        reverse("player_detail", args=[user.get_username()]),
        name(user),
    )


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


def _started_text(game: Game) -> str:
    return gettext("%(name)s started a game against you.") % {
        "name": name(game.created_by_player)
    }


def lobby_text(game: Game, viewer) -> str:
    """A game's line in `viewer`'s lobby: new games say who started them."""
    if getattr(game, "is_new", False):
        return _started_text(game)
    return turn_text(game, viewer)


def turn_text(game: Game, viewer) -> str:
    """One line that says what happens next, from the viewer's side."""
    if game.is_waiting:
        if game.is_player(viewer):
            return gettext(
                "Waiting for an opponent to join. Share this page's address."
            )
        return gettext("This game is open: join it to play.")
    if game.is_in_progress:
        mark = game.next_mark
        if not game.is_turn_of(viewer):
            text = gettext("Waiting for %(name)s (%(mark)s).") % {
                "name": name(game.player_for(mark)),
                "mark": mark,
            }
        elif game.is_self_play:
            text = gettext("Your turn (%(mark)s).") % {"mark": mark}
        else:
            text = gettext("Your turn.")
        return sentences(text, _left_text(game))
    return result_text(game, viewer)


def _ended_by_a_move(game: Game) -> bool:
    """Won on the board or drawn: the last move ended it (not a forfeit or abort)."""
    if game.is_waiting:
        return False
    status = rules.Status(game.status)
    return status.has_result and not status.is_forfeit


def _is_viewer(user, viewer) -> bool:
    return viewer is not None and user is not None and user.pk == viewer.pk


def _won_text(user, viewer) -> str:
    """ "You won." to `user` themselves, else "bob won."."""
    if _is_viewer(user, viewer):
        return gettext("You won.")
    return gettext("%(name)s won.") % {"name": name(user)}


def announcement(game: Game, viewer) -> str:
    """What the game page's live region says once a change arrives: the latest
    move, then what follows ("bob played O in row 2, column 3. Your turn.")."""
    if not game.move_count or not (game.is_in_progress or _ended_by_a_move(game)):
        return turn_text(game, viewer)  # waiting, a forfeit, an abort, no move yet
    mark = rules.to_move(game.move_count - 1)
    row, col = game.played_cells[-1]
    player = game.player_for(mark.value)
    move = {"mark": mark.value, "cell": cell_name(row, col)}
    if _is_viewer(player, viewer):
        played = gettext("You played %(mark)s in %(cell)s.") % move
    else:
        played = gettext("%(name)s played %(mark)s in %(cell)s.") % (
            move | {"name": name(player)}
        )
    if game.is_in_progress:
        return sentences(played, turn_text(game, viewer))
    winner = game.winner_mark
    if winner is None:
        return sentences(played, gettext("Draw."))
    if game.is_self_play:
        return sentences(played, gettext("%(mark)s won.") % {"mark": winner})
    return sentences(played, _won_text(game.player_for(winner), viewer))


@dataclass(frozen=True, slots=True)
class TurnNotice:
    """A system notification for a player whose page is hidden (static/games/
    notify.js). `key` names the change, the same in every tab and on the lobby
    and the game page, so that one tab shows it; `tag` is one per game, so a
    newer notification of a game replaces the older one on screen; `url` is the
    game's page, where a click on it leads."""

    key: str
    tag: str
    title: str
    body: str
    url: str

    @property
    def attributes(self) -> SafeString:
        """The `data-notice-*` attributes notify.js reads, with a leading space,
        to write straight after a tag's other attributes."""
        return format_html(
            ' data-notice="{}" data-notice-tag="{}" data-notice-title="{}"'
            ' data-notice-body="{}" data-notice-url="{}"',
            self.key,
            self.tag,
            self.title,
            self.body,
            self.url,
        )


def turn_notice(game: Game, viewer) -> TurnNotice | None:
    """The notification `viewer` gets for the game as it is now, if its latest
    change is one they wait for: their opponent started it against them, or
    moved (it is `viewer`'s turn, or the move ended the game). None for anything
    `viewer` did themselves, for spectators and for self-play.

    Reads only the lobby's columns of the game (games.field_lists.GAME_ROW_FIELDS)."""
    marks = game.marks_for(viewer)
    if len(marks) != 1 or not game.has_both_players:
        return None
    mine = rules.Mark(marks[0])
    opponent = game.player_for(mine.other.value)
    count = game.move_count
    if game.is_in_progress:
        yours = game.is_turn_of(viewer)
        # As the lobby's "New" (queries.GameQuerySet.for_lobby): started by the
        # opponent, and `viewer` has not moved yet.
        new = game.created_by_id == opponent.pk
        if new and count <= rules.moves_before_first(mine):
            body = _started_text(game)
            if yours:
                body = sentences(body, gettext("Your turn."))
        elif yours and count:
            body = gettext("%(name)s has moved. Your turn.") % {"name": name(opponent)}
        else:
            return None
    elif _ended_by_a_move(game) and rules.to_move(count - 1) is mine.other:
        if game.winner_mark is None:
            body = gettext("Draw.")
        else:
            body = gettext("%(name)s won.") % {"name": name(opponent)}
    else:
        return None
    return TurnNotice(
        key=f"game-{game.pk}-{count}",
        tag=f"game-{game.pk}",
        title=gettext("Game %(id)s against %(name)s")
        % {"id": game.pk, "name": name(opponent)},
        body=body,
        url=game.get_absolute_url(),
    )


def _left_text(game: Game) -> str:
    """ " bob has left: they closed their account." for a game that stays."""
    gone = [p for p in (game.player_x, game.player_o) if not p.is_active]
    if not gone:
        return ""
    return gettext("%(username)s has left: they closed their account.") % {
        "username": gone[0].get_username()
    }


def aborted_text(game: Game, viewer=None) -> str:
    """ "Aborted by alice." ("by you" to alice herself)."""
    aborter = game.player_for_id(game.aborted_by_id)
    if _is_viewer(aborter, viewer):
        return gettext("Aborted by you.")
    return gettext("Aborted by %(name)s.") % {"name": name(aborter)}


def result_text(game: Game, viewer=None) -> str:
    status = game.status
    if status == GameStatus.ABORTED:
        return aborted_text(game, viewer)
    if status == GameStatus.DRAW:
        return gettext("Draw.")
    winner = game.winner_mark
    loser = rules.Mark(winner).other.value
    values = {
        "mark": winner,
        "name": name(game.player_for(winner)),
        "loser_mark": loser,
        "loser": name(game.player_for(loser)),
    }
    forfeit = rules.Status(status).is_forfeit
    if game.is_self_play:
        if forfeit:
            text = gettext("%(mark)s wins: %(loser)s (%(loser_mark)s) forfeited.")
        else:
            text = gettext("%(mark)s wins!")
    elif _is_viewer(game.player_for(winner), viewer):
        if forfeit:
            text = gettext("You win: %(loser)s (%(loser_mark)s) forfeited.")
        else:
            text = gettext("You win!")
    elif forfeit:
        text = gettext(
            "%(name)s (%(mark)s) wins: %(loser)s (%(loser_mark)s) forfeited."
        )
    else:
        text = gettext("%(name)s (%(mark)s) wins!")
    return text % values


def series_text(game: Game) -> str | None:
    """ "alice 3 – 2 bob, 1 draw" from X's player's side; None for self-play."""
    score = game.series_score
    if score is None or game.is_self_play:
        return None
    x_wins, o_wins, draws = score
    return score_text(game.player_x, x_wins, o_wins, draws, game.player_o)


def snapshot(game: Game) -> dict:
    """The read-only JSON snapshot; its field names are a public contract
    (docs/routes.md)."""
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
    values = {
        "first": name(first),
        "first_wins": first_wins,
        "second_wins": second_wins,
        "second": name(second),
        "draws": draws,
    }
    if not draws:
        return gettext("%(first)s %(first_wins)s – %(second_wins)s %(second)s") % values
    return (
        ngettext(
            "%(first)s %(first_wins)s – %(second_wins)s %(second)s, %(draws)s draw",
            "%(first)s %(first_wins)s – %(second_wins)s %(second)s, %(draws)s draws",
            draws,
        )
        % values
    )


def outcome_text(result: PlayerResult, viewer=None) -> str:
    """A finished game from its player's side: "Won as X (bob forfeited)".
    `viewer` is who reads it: someone else's self-play is "against themselves"."""
    game = result.game
    if result.outcome == ResultOutcome.ABORTED:
        return aborted_text(game, viewer)
    if result.outcome == ResultOutcome.SELF_PLAY:
        if viewer is not None and viewer.pk == result.player_id:
            text = gettext("Against yourself — %(result)s")
        else:
            text = gettext("Against themselves — %(result)s")
        return text % {"result": result_text(game)}
    values = {"mark": result.mark, "opponent": name(result.opponent)}
    if result.outcome == ResultOutcome.WIN:
        if rules.Status(game.status).is_forfeit:
            return gettext("Won as %(mark)s (%(opponent)s forfeited)") % values
        return gettext("Won as %(mark)s") % values
    if result.outcome == ResultOutcome.LOSS:
        return gettext("Lost as %(mark)s") % values
    if result.outcome == ResultOutcome.FORFEIT:
        return gettext("Forfeited as %(mark)s") % values
    return gettext("Draw as %(mark)s") % values


def streak_text(streak: Streak) -> str:
    if not streak.length:
        return gettext("none yet")
    if streak.kind == "win":
        text = ngettext(
            "%(count)s win in a row", "%(count)s wins in a row", streak.length
        )
    elif streak.kind == "loss":
        text = ngettext(
            "%(count)s loss in a row", "%(count)s losses in a row", streak.length
        )
    elif streak.kind == "draw":
        text = ngettext(
            "%(count)s draw in a row", "%(count)s draws in a row", streak.length
        )
    else:
        raise ValueError(f"not a streak: {streak.kind!r}")
    return text % {"count": streak.length}


@dataclass(frozen=True, slots=True)
class ReplayLink:
    """One step link of the replay: to ?ply=`ply`, or shown disabled where `ply`
    is None (it would go nowhere). `key` is the key static/games/replay.js
    follows it on (a KeyboardEvent.key), `rel` its link relation if any."""

    label: str
    ply: int | None
    key: str
    rel: str = ""


@dataclass(frozen=True, slots=True)
class ReplayNav:
    """The replay after `ply` of `last` moves, and where its links point."""

    ply: int
    last: int

    def links(
        self, *, first_label: str, previous_label: str, next_label: str, last_label: str
    ) -> tuple[ReplayLink, ...]:
        """First, previous, next and last, in that order. The words come from the
        template (games.templatetags.replay), whose catalog holds them."""
        back = self.ply > 0
        forward = self.ply < self.last
        return (
            ReplayLink(first_label, 0 if back else None, "Home"),
            ReplayLink(
                previous_label, self.ply - 1 if back else None, "ArrowLeft", "prev"
            ),
            ReplayLink(
                next_label, self.ply + 1 if forward else None, "ArrowRight", "next"
            ),
            ReplayLink(last_label, self.last if forward else None, "End"),
        )
