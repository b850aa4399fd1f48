"""The pure rules module: no database, no Django."""

import ast
import contextlib
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import rules
from games.rules import Board, GameState, Mark, Status, statuses_won_by

ROW_COL_LINES = [[rules.cell_of(i) for i in line] for line in rules.LINES]


def test_rules_module_imports_nothing_from_django():
    tree = ast.parse(Path(rules.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not any(name.split(".")[0] == "django" for name in imported), imported


def filler_moves(line: list[tuple[int, int]], loser_count: int):
    """Cells off `line` for the other side, chosen so they never make a line."""
    others = [(r, c) for r in range(3) for c in range(3) if (r, c) not in line]
    for combo in combinations(others, loser_count):
        board_cells = set(combo)
        if not any(
            all(cell in board_cells for cell in other) for other in ROW_COL_LINES
        ):
            return list(combo)
    raise AssertionError("no filler")


@pytest.mark.parametrize("line_number", range(8))
def test_x_wins_on_every_line(line_number):
    line = ROW_COL_LINES[line_number]
    o_cells = filler_moves(line, 2)
    moves = [line[0], o_cells[0], line[1], o_cells[1], line[2]]
    board = Board.from_moves(moves)
    assert board.status is Status.X_WON
    assert board.winning_line == line_number
    assert rules.line_cells(board.winning_line) == line


@pytest.mark.parametrize("line_number", range(8))
def test_o_wins_on_every_line(line_number):
    line = ROW_COL_LINES[line_number]
    x_cells = filler_moves(line, 3)
    moves = [x_cells[0], line[0], x_cells[1], line[1], x_cells[2], line[2]]
    board = Board.from_moves(moves)
    assert board.status is Status.O_WON
    assert board.winning_line == line_number
    assert board.status.winner is Mark.O


def test_full_board_without_a_line_is_a_draw():
    # X O X / X O O / O X X
    moves = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 0), (1, 2), (2, 1), (2, 0), (2, 2)]
    board = Board.from_moves(moves)
    assert board.cells == "XOXXOOOXX"
    assert board.status is Status.DRAW
    assert board.winning_line is None
    assert board.status.winner is None


def test_ninth_move_that_completes_a_line_is_a_win_not_a_draw():
    # O O X / X O X / O X X: the 9th move, X at (0, 2), completes the right column.
    moves = [(1, 2), (2, 0), (2, 1), (1, 1), (1, 0), (0, 0), (2, 2), (0, 1), (0, 2)]
    assert Board.from_moves(moves[:8]).status is Status.IN_PROGRESS
    board = Board.from_moves(moves)
    assert board.cells == "OOXXOXOXX"
    assert board.is_full
    assert board.status is Status.X_WON
    assert rules.line_cells(board.winning_line) == [(0, 2), (1, 2), (2, 2)]


def test_x_moves_first_and_players_alternate():
    board = Board()
    assert board.next_mark is Mark.X
    board = board.play(1, 1)
    assert board.next_mark is Mark.O
    assert board[1, 1] is Mark.X
    assert board.play(0, 0)[0, 0] is Mark.O


@pytest.mark.parametrize(
    ("row", "col"), [(-1, 0), (0, -1), (3, 0), (0, 3), (99, 99), ("1", 1), (1.0, 1)]
)
def test_outside_the_board_is_rejected(row, col):
    with pytest.raises(rules.OutsideBoard) as excinfo:
        Board().play(row, col)
    assert excinfo.value.message == ("That cell is outside the board.")


def test_occupied_cell_is_rejected_and_board_unchanged():
    board = Board().play(0, 0)
    with pytest.raises(rules.CellOccupied, match="already taken"):
        board.play(0, 0)
    assert board.cells == "X--------"


def test_wrong_player_is_rejected():
    with pytest.raises(rules.NotYourTurn, match="not your turn"):
        Board().play(0, 0, mark=Mark.O)
    with pytest.raises(rules.NotYourTurn):
        Board().play(0, 0).play(1, 1, mark=Mark.X)


def test_no_move_after_a_win():
    won = Board.from_moves([(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)])
    with pytest.raises(rules.GameOver, match="game is over"):
        won.play(2, 2)


def test_no_move_after_a_forfeit():
    state = GameState().forfeit(Mark.X)
    assert state.status is Status.X_FORFEITS
    with pytest.raises(rules.GameOver):
        state.play(0, 0)


def test_forfeit_only_on_your_own_turn():
    state = GameState()
    with pytest.raises(rules.NotYourTurn, match="only forfeit on your own turn"):
        state.forfeit(Mark.O)
    after_x = state.play(0, 0)
    assert after_x.forfeit(Mark.O).status is Status.O_FORFEITS
    assert after_x.forfeit(Mark.O).winner is Mark.X


def test_forfeit_after_the_end_is_rejected():
    won = GameState().play(0, 0)
    for cell in [(1, 0), (0, 1), (1, 1), (0, 2)]:
        won = won.play(*cell)
    assert won.status is Status.X_WON
    with pytest.raises(rules.GameOver, match="nothing left to forfeit"):
        won.forfeit(Mark.O)


def test_impossible_boards_are_refused():
    with pytest.raises(ValueError, match="impossible"):
        Board("OO-------")
    with pytest.raises(ValueError, match="not a board"):
        Board("X?-------")
    with pytest.raises(ValueError, match="contradicts"):
        GameState(Board("XXXOO----"), Status.IN_PROGRESS)


cells = st.tuples(st.integers(0, 2), st.integers(0, 2))


@settings(max_examples=300, deadline=None)
@given(st.lists(cells, max_size=30))
def test_any_sequence_of_legal_moves_keeps_the_invariants(attempts):
    state = GameState()
    played = 0
    for row, col in attempts:
        try:
            state = state.play(row, col)
        except rules.MoveRejected:
            continue
        played += 1
        board = state.board
        x, o = board.cells.count("X"), board.cells.count("O")
        assert x - o in (0, 1)
        assert board.move_count == played <= 9
        assert state.status is board.status
        if state.status in (Status.X_WON, Status.O_WON):
            line = rules.LINES[board.winning_line]
            winner = state.winner.value
            assert all(board.cells[i] == winner for i in line)
        elif state.status is Status.DRAW:
            assert board.is_full
            assert board.winning_line is None
        else:
            assert not board.is_full
            assert board.winning_line is None
    assert played <= 9


@settings(max_examples=200, deadline=None)
@given(st.lists(cells, max_size=12), st.sampled_from([Mark.X, Mark.O]))
def test_forfeit_is_legal_exactly_on_your_turn_of_a_running_game(attempts, mark):
    state = GameState()
    for row, col in attempts:
        with contextlib.suppress(rules.MoveRejected):
            state = state.play(row, col)
    if state.status.is_over or mark != state.board.next_mark:
        with pytest.raises(rules.MoveRejected):
            state.forfeit(mark)
    else:
        ended = state.forfeit(mark)
        assert ended.winner is mark.other
        assert ended.board == state.board


def test_abort_is_allowed_until_both_sides_have_moved():
    for cells in ([], [(0, 0)]):
        state = GameState(Board.from_moves(cells))
        assert state.can_abort
        ended = state.abort()
        assert ended.status is Status.ABORTED
        assert ended.winner is None
        assert ended.board == state.board
        assert ended.status.is_over
        assert not ended.status.has_result
    late = GameState(Board.from_moves([(0, 0), (1, 1)]))
    assert not late.can_abort
    with pytest.raises(rules.TooLateToAbort) as refused:
        late.abort()
    assert refused.value.message == (
        "Two moves have been played: finish the game or forfeit on your turn."
    )


def test_an_ended_game_cannot_be_aborted():
    forfeited = GameState().forfeit(Mark.X)
    aborted = GameState().abort()
    for state in (forfeited, aborted):
        assert not state.can_abort
        with pytest.raises(rules.GameOver, match="nothing left to abort"):
            state.abort()
    with pytest.raises(rules.GameOver):
        aborted.play(0, 0)
    with pytest.raises(ValueError, match="cannot abort"):
        GameState(Board.from_moves([(0, 0), (1, 1)]), Status.ABORTED)


@settings(max_examples=200, deadline=None)
@given(st.lists(cells, max_size=12))
def test_abort_is_legal_exactly_before_the_second_move(attempts):
    state = GameState()
    for row, col in attempts:
        with contextlib.suppress(rules.MoveRejected):
            state = state.play(row, col)
    if state.status.is_over or state.board.move_count >= 2:
        with pytest.raises(rules.Rejected):
            state.abort()
    else:
        assert state.abort().status is Status.ABORTED


def test_whose_turn_by_move_count_matches_the_board():
    """to_move and its set form (what the lobby's SQL uses) agree with a board
    replayed move by move; X's first move is at 0 moves, O's at 1."""
    order = [(0, 0), (1, 1), (0, 1), (0, 2), (2, 0), (1, 0), (1, 2), (2, 1), (2, 2)]
    for count in range(9):
        board = Board.from_moves(order[:count])
        assert rules.to_move(count) is board.next_mark
        assert count in rules.move_counts_to_move(board.next_mark)
        assert count not in rules.move_counts_to_move(board.next_mark.other)
    assert rules.move_counts_to_move(Mark.X) == (0, 2, 4, 6, 8)
    assert rules.move_counts_to_move(Mark.O) == (1, 3, 5, 7)
    assert (rules.moves_before_first(Mark.X), rules.moves_before_first(Mark.O)) == (
        0,
        1,
    )


def test_what_counts_as_a_forfeit():
    forfeits = {status for status in Status if status.is_forfeit}
    assert forfeits == {Status.X_FORFEITS, Status.O_FORFEITS}


def test_the_statuses_each_side_wins():
    assert statuses_won_by(Mark.X) == [Status.X_WON, Status.O_FORFEITS]
    assert statuses_won_by(Mark.O) == [Status.O_WON, Status.X_FORFEITS]
