"""Everything the site keeps about a person, as JSON (the account page's
download; docs/playing.md, 7): the account, its email addresses, the
your-turn email choice, the people they blocked, their signed-in browsers,
their second factors (which kinds, when made and last used; never a secret),
every game they played with its moves and result, their record and series.

A fixed number of queries however many games (the moves of every game in one),
so the download of a long-time player costs what anyone's does.
"""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.usersessions.models import UserSession
from django.db.models import Prefetch
from django.utils import timezone

from games import presentation
from games.models import Block, Game, Move, PlayerRecord, PlayerResult, Series

from .models import Preferences, TurnEmailPreference

FORMAT = "tictactoe personal data, version 1"


def _time(value) -> str | None:
    return value.isoformat() if value is not None else None


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
        "rematch_of": game.rematch_of_id,
        "created_at": _time(game.created_at),
        "finished_at": _time(game.finished_at),
        "moves": [
            {
                "sequence_number": move.sequence_number,
                "player": move.player,
                "row": move.row,
                "col": move.col,
                "played_at": _time(move.created_at),
            }
            for move in game.moves.all()
        ],
    }


def everything_about(user) -> dict:
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
    preference = TurnEmailPreference.objects.filter(user=user).first()
    language, time_zone = Preferences.objects.filter(user=user).values_list(
        "language", "time_zone"
    ).first() or ("", "")
    record = PlayerRecord.objects.record_of(user)
    return {
        "format": FORMAT,
        "exported_at": _time(timezone.now()),
        "account": {
            "id": user.pk,
            "username": user.get_username(),
            "date_joined": _time(user.date_joined),
            "last_login": _time(user.last_login),
            "is_active": user.is_active,
        },
        "email_addresses": [
            {"email": a.email, "verified": a.verified, "primary": a.primary}
            for a in EmailAddress.objects.filter(user=user).order_by("id")
        ],
        "preferences": {
            "turn_emails": bool(preference and preference.enabled),
            "turn_email_last_sent_at": _time(preference and preference.last_sent_at),
            "last_seen_at": _time(preference and preference.last_seen_at),
            # "": not chosen (the browser's language; a zone not told yet).
            "language": language,
            "time_zone": time_zone,
        },
        "blocked": [
            {"username": _name(block.blocked), "since": _time(block.created_at)}
            for block in Block.objects.blocked_by(user)
        ],
        "signed_in_browsers": [
            {
                "signed_in_at": _time(session.created_at),
                "ip": session.ip,
                "user_agent": session.user_agent,
            }
            for session in UserSession.objects.filter(user=user).order_by("id")
        ],
        "second_factors": [
            {
                "type": factor.type,
                # A passkey's or security key's name, as its owner gave it.
                "name": factor.data.get("name") if factor.type == "webauthn" else None,
                "created_at": _time(factor.created_at),
                "last_used_at": _time(factor.last_used_at),
            }
            for factor in Authenticator.objects.filter(user=user).order_by("id")
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
