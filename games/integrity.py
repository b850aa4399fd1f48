"""Invariant checks over stored games: what `manage.py check_games` reports.

Independent of the constraints on purpose: it replays every game's Move rows
through games.rules and compares the result with the denormalised Game row.
"""

from collections.abc import Iterator

from . import rules
from .choices import FINISHED_STATUSES, GameStatus
from .models import Game, PlayerRecord, PlayerResult
from .result_rows import COUNTERS, ResultRow, result_rows


def game_violations(game: Game, moves: list[tuple[int, int, int, str]]) -> list[str]:
    """What is wrong with one game, given its moves as (sequence, row, col, player)."""
    problems = []
    numbers = [sequence for sequence, _, _, _ in moves]
    if numbers != list(range(1, len(moves) + 1)):
        problems.append(f"move sequence numbers are {numbers}, not 1..{len(moves)}")
    try:
        state = rules.GameState()
        for sequence, row, col, player in moves:
            if player != state.board.next_mark:
                problems.append(f"move {sequence} is by {player} out of turn")
                break
            state = state.play(row, col)
    except rules.Rejected as exc:
        problems.append(f"moves do not replay: {exc.message}")
        return problems
    board = state.board
    if game.board != board.cells:
        problems.append(f"board {game.board!r} but the moves give {board.cells!r}")
    if game.move_count != len(moves):
        problems.append(f"move_count {game.move_count} but {len(moves)} moves stored")
    order = "".join(str(rules.cell_index(row, col)) for _, row, col, _ in moves)
    if game.move_order != order:
        problems.append(f"move_order {game.move_order!r} but the moves give {order!r}")
    problems.extend(_status_violations(game, board))
    return problems


def _status_violations(game: Game, board: rules.Board) -> list[str]:
    outcome = board.status
    status = game.status
    if status == GameStatus.WAITING:
        if board.move_count or (game.player_x_id is None) == (game.player_o_id is None):
            return ["a waiting game must have one player and no moves"]
        return []
    if status == GameStatus.ABORTED:
        return _aborted_violations(game, board)
    if None in (game.player_x_id, game.player_o_id):
        return [f"status {status} but a player is missing"]
    if rules.Status(status).is_forfeit:
        if outcome.is_over:
            return [f"status {status} but the board says {outcome}"]
        return []
    if status != outcome:
        return [f"status {status} but the board says {outcome}"]
    if game.winning_line != board.winning_line:
        return [
            f"winning_line {game.winning_line} but the board has {board.winning_line}"
        ]
    if (status in FINISHED_STATUSES) != (game.finished_at is not None):
        return ["finished_at does not match the status"]
    return []


def _aborted_violations(game: Game, board: rules.Board) -> list[str]:
    """Aborted before both sides moved, by one of its players; an open game
    withdrawn by its creator has no moves."""
    problems = []
    if board.move_count >= rules.ABORTABLE_BELOW_MOVES:
        problems.append(f"aborted after {board.move_count} moves")
    if None in (game.player_x_id, game.player_o_id) and board.move_count:
        problems.append("aborted with a player missing but moves played")
    if game.aborted_by_id not in (game.player_x_id, game.player_o_id):
        problems.append("aborted by someone who is not a player")
    if game.finished_at is None or game.winning_line is not None:
        problems.append("an aborted game must have finished_at and no winning line")
    return problems


def result_violations(game: Game, stored: list[ResultRow]) -> list[str]:
    """A finished game has exactly the PlayerResult rows its status gives
    (what records and the archive count); an unfinished one has none."""
    expected = (
        result_rows(game.player_x_id, game.player_o_id, game.status)
        if game.status in FINISHED_STATUSES
        else []
    )
    # By text: an aborted open game's row has no opponent (None).
    stored, expected = sorted(stored, key=str), sorted(expected, key=str)
    if stored == expected:
        return []
    return [f"player results {stored} but the game gives {expected}"]


def player_violations(game: Game) -> list[str]:
    """A game in progress waits on an active player: an inactive one (a closed or
    deactivated account) can never move, and the other can neither move, forfeit
    nor abort. Leaving settles each game (services.settle_games_and_deactivate),
    so only a deactivation that went around it leaves one here."""
    mover = game.player_for(game.next_mark)
    if mover is not None and not mover.is_active:
        return [
            f"in progress with {game.next_mark} to move, but that player "
            f"({mover.get_username()}) is inactive: the game can never end"
        ]
    return []


def all_violations(chunk_size: int = 2000) -> Iterator[tuple[int, str]]:
    """(game id, problem) for every stored game, read in chunks."""
    games = (
        Game.objects.order_by("pk")
        .select_related("player_x", "player_o")
        .prefetch_related("moves", "results")
    )
    for game in games.iterator(chunk_size=chunk_size):
        moves = sorted(
            (move.sequence_number, move.row, move.col, move.player)
            for move in game.moves.all()
        )
        results = [
            ResultRow(row.player_id, row.opponent_id, row.mark, row.outcome)
            for row in game.results.all()
        ]
        problems = (
            game_violations(game, moves)
            + result_violations(game, results)
            + player_violations(game)
        )
        for problem in problems:
            yield game.pk, problem


def record_violations() -> Iterator[tuple[int, str]]:
    """(player id, problem) wherever a PlayerRecord counter differs from the
    player's PlayerResult rows (which all_violations checks against the games)."""
    expected = PlayerResult.objects.counters()
    stored = {row["player_id"]: row for row in PlayerRecord.objects.values()}
    for player_id in sorted(expected.keys() | stored.keys()):
        row = stored.get(player_id, {})
        for counter in COUNTERS:
            have, want = row.get(counter, 0), expected[player_id][counter]
            if have != want:
                yield (
                    player_id,
                    f"record {counter} is {have} but the results give {want}",
                )
