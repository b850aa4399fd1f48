"""The least a Django app can do to show a board and take a move: one query for
the game and its players, one for its moves, a 3x3 grid of CSRF-protected POST
forms; a POST that updates one row and redirects."""

from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template import engines
from django.views.decorators.http import require_GET, require_POST

from games.models import Game, Move

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
