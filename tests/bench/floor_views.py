"""The least a Django app can do to show a board and take a move: one query for
the game and its players, one for its moves, a 3x3 grid of CSRF-protected POST
forms; a POST that updates one row and redirects.

Beside that floor, the move as a Django tic-tac-toe takes it by the book
(`textbook_move`): a form for the cell, the game locked in a transaction, the
turn and the cell checked, a `Move` created and the `Game` saved. A peer's app
keeps no series or records, so neither does this view when a game ends."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import F
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template import engines
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from games.models import Game, GameStatus, Move

PAGE = engines["django"].from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Game {{ game.pk }}</title></head>
<body>
<h1>{{ game.player_x.username }} vs {{ game.player_o.username }}</h1>
<table>{% for row in rows %}<tr>{% for index, mark in row %}<td>
<form method="post" action="{% url 'floor_move' game.pk %}">{% csrf_token %}
<input type="hidden" name="cell" value="{{ index }}">
<button type="submit">{{ mark }}</button></form></td>{% endfor %}</tr>{% endfor %}
</table>
<ol>{% for move in moves %}
<li>{{ move.player }} ({{ move.row }}, {{ move.col }})</li>{% endfor %}</ol>
</body></html>"""
)

# The cells (row * 3 + col) of the eight lines that win, numbered as
# Game.winning_line stores them: rows, columns, diagonals. The view's own, as a
# peer's app has it, not games.rules.
LINES = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)


@require_GET
@login_required
def board(request, game_id: int):
    game = get_object_or_404(
        Game.objects.select_related("player_x", "player_o"), pk=game_id
    )
    moves = list(Move.objects.filter(game=game))
    cells = list(enumerate(game.board))
    rows = [cells[start : start + 3] for start in (0, 3, 6)]
    context = {"game": game, "rows": rows, "moves": moves}
    return HttpResponse(PAGE.render(context, request))


@require_POST
@login_required
def move(request, game_id: int):
    Game.objects.filter(pk=game_id).update(version=F("version") + 1)
    return redirect("floor_board", game_id)


class CellForm(forms.Form):
    row = forms.IntegerField(min_value=0, max_value=2)
    col = forms.IntegerField(min_value=0, max_value=2)


@require_POST
@login_required
def textbook_move(request, game_id: int):
    form = CellForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Row and col must be 0, 1 or 2.", status=400)
    row, col = form.cleaned_data["row"], form.cleaned_data["col"]
    cell = row * 3 + col
    with transaction.atomic():
        game = get_object_or_404(Game.objects.select_for_update(), pk=game_id)
        if game.status != GameStatus.IN_PROGRESS:
            return HttpResponse("This game is not in progress.", status=409)
        # X moves first, then the players alternate.
        mark = "X" if game.move_count % 2 == 0 else "O"
        player_id = game.player_x_id if mark == "X" else game.player_o_id
        if request.user.pk != player_id:
            return HttpResponse("It is not your turn.", status=403)
        if game.board[cell] != "-":
            return HttpResponse("That cell is taken.", status=409)
        game.board = game.board[:cell] + mark + game.board[cell + 1 :]
        game.move_count += 1
        game.move_order += str(cell)
        game.version += 1
        Move.objects.create(
            game=game,
            sequence_number=game.move_count,
            row=row,
            col=col,
            player=mark,
        )
        for number, line in enumerate(LINES):
            if all(game.board[index] == mark for index in line):
                game.status = GameStatus.X_WON if mark == "X" else GameStatus.O_WON
                game.winning_line = number
                break
        else:
            if "-" not in game.board:
                game.status = GameStatus.DRAW
        if game.status != GameStatus.IN_PROGRESS:
            game.finished_at = timezone.now()
        game.save()
    return redirect("floor_board", game.pk)
