"""Everything the site keeps about a person, as JSON (the account page's
download; docs/playing.md, 7): the account, its email addresses, the
your-turn email choice, their signed-in browsers, their second factors (which
kinds, when made and last used; never a secret), and the sections the apps add
through accounts.signals.personal_data (games.data_export: games, record,
series, blocks).
"""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.usersessions.models import UserSession
from django.utils import timezone

from .models import Preferences, TurnEmailPreference
from .signals import personal_data

FORMAT = "tictactoe personal data, version 1"


def export_time(value) -> str | None:
    return value.isoformat() if value is not None else None


def everything_about(user) -> dict:
    preference = TurnEmailPreference.objects.filter(user=user).first()
    language, time_zone, new_games_private = Preferences.objects.filter(
        user=user
    ).values_list("language", "time_zone", "new_games_private").first() or (
        "",
        "",
        False,
    )
    data = {
        "format": FORMAT,
        "exported_at": export_time(timezone.now()),
        "account": {
            "id": user.pk,
            "username": user.get_username(),
            "date_joined": export_time(user.date_joined),
            "last_login": export_time(user.last_login),
            "is_active": user.is_active,
        },
        "email_addresses": [
            {"email": a.email, "verified": a.verified, "primary": a.primary}
            for a in EmailAddress.objects.filter(user=user).order_by("id")
        ],
        "preferences": {
            "turn_emails": bool(preference and preference.enabled),
            "turn_email_last_sent_at": export_time(
                preference and preference.last_sent_at
            ),
            "last_seen_at": export_time(preference and preference.last_seen_at),
            # "": not chosen (the browser's language; a zone not told yet).
            "language": language,
            "time_zone": time_zone,
            "new_games_private": new_games_private,
        },
        "signed_in_browsers": [
            {
                "signed_in_at": export_time(session.created_at),
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
                "created_at": export_time(factor.created_at),
                "last_used_at": export_time(factor.last_used_at),
            }
            for factor in Authenticator.objects.filter(user=user).order_by("id")
        ],
    }
    for _receiver, sections in personal_data.send(sender=None, user=user):
        data.update(sections)
    return data
