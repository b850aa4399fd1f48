"""A player's games in their data export (accounts.data_export): every game
they played with its moves and result, their record and series, the people
they blocked.

A fixed number of queries however many games (the moves of every game in one),
so the download of a long-time player costs what anyone's does.
"""

from django.db.models import Prefetch
from django.dispatch import receiver

from accounts.data_export import export_time
from accounts.signals import personal_data

from . import presentation
from .models import Block, Game, Move, PlayerRecord, PlayerResult, Series


def _name(user) -> str | None:
    return presentation.username(user)


def _tally(tally) -> dict:
    return {
        "wins": tally.wins,
        "losses": tally.losses,
        "forfeits": tally.forfeits,
        "draws": tally.draws,
    }


def _game(game: Game, user, outcomes: dict[int, str]) -> dict:
    """state.json's fields (docs/routes.md), and what the site keeps beside them."""
    return {
        **presentation.snapshot(game),
        "your_marks": [mark.value for mark in game.marks_for(user)],
        "your_result": outcomes.get(game.pk),
        "created_by": _name(game.created_by_player),
        "aborted_by": _name(game.player_for_id(game.aborted_by_id)),
        "by_invitation": game.is_invitation,
        "private": game.is_private,
        "rematch_of": game.rematch_of_id,
        "created_at": export_time(game.created_at),
        "finished_at": export_time(game.finished_at),
        "moves": [
            {
                "sequence_number": move.sequence_number,
                "player": move.player,
                "row": move.row,
                "col": move.col,
                "played_at": export_time(move.created_at),
            }
            for move in game.moves.all()
        ],
    }


@receiver(personal_data, dispatch_uid="games_personal_data")
def games_of(sender, *, user, **kwargs) -> dict:
    games = (
        Game.objects.of(user)
        .select_related("player_x", "player_o", "invitation")
        .prefetch_related(
            Prefetch("moves", queryset=Move.objects.order_by("sequence_number"))
        )
        .order_by("created_at", "id")
    )
    outcomes = dict(
        PlayerResult.objects.filter(player=user).values_list("game_id", "outcome")
    )
    record = PlayerRecord.objects.record_of(user)
    return {
        "blocked": [
            {"username": _name(block.blocked), "since": export_time(block.created_at)}
            for block in Block.objects.blocked_by(user)
        ],
        "games": [_game(game, user, outcomes) for game in games],
        "record": {
            "as_x": _tally(record.as_x),
            "as_o": _tally(record.as_o),
            "self_play": record.self_play,
        },
        "head_to_head": [
            {"opponent": _name(opponent), "wins": w, "losses": lost, "draws": d}
            for opponent, w, lost, d in Series.objects.head_to_head(user)
        ],
    }
