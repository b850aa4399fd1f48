"""'Your turn' emails: a player who opted in (TurnEmailPreference) and has a
confirmed address gets one email listing every game waiting on them, once a
game has waited more than `GAMES_TURN_EMAIL_AFTER` seconds without them being
on the site since it began waiting; at most one per `GAMES_TURN_EMAIL_EVERY`.

`send_turn_emails` is the task the worker runs about once a minute (registered
with tictactoe_site.jobs.periodic, whose heartbeat queues it): no cron. Each
email is queued (the default mailer, tictactoe_site.jobs.mail) in the
transaction that records it as sent, so a worker stopped between the two can
neither lose it nor send it twice. The choice and the unsubscribe link are
accounts' (accounts.services).

A run costs what its mail costs: one query finds the players due an email
(`due`: opted in, confirmed, not mailed lately, and a game waiting on them past
the delay), so players with nothing waiting cost nothing however many opted in;
then one locked transaction per email. Each email is written in its player's
language and time zone (accounts.models.Preferences), else the site's language
(settings.LANGUAGE_CODE: no request asked for it) and UTC. Runs never overlap,
on any number of workers and hosts: a run that finds another still going skips
(tictactoe_site.jobs.job_locks).
"""

from datetime import datetime, timedelta

from allauth.account.models import EmailAddress
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.lookups import GreaterThan, IsNull
from django.tasks import task
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from accounts.middleware import language_named, zone_named
from accounts.models import Preferences, TurnEmailPreference
from accounts.services import unsubscribe_url
from tictactoe_site.jobs import periodic
from tictactoe_site.jobs.job_locks import running_alone

from .models import Game
from .presentation import display_name, open_side
from .queries import turn_of

RUN_EVERY = timedelta(minutes=1)


def _after() -> timedelta:
    return timedelta(seconds=settings.GAMES_TURN_EMAIL_AFTER)


def _every() -> timedelta:
    return timedelta(seconds=settings.GAMES_TURN_EMAIL_EVERY)


def _not_sent_since(now: datetime) -> Q:
    return Q(last_sent_at__isnull=True) | Q(last_sent_at__lte=now - _every())


def _unseen_since_it_began_waiting(seen_field: str):
    """SQL over games, inside a query over preferences (`seen_field`, a path
    from the preference): the game began waiting (`updated_at`) after the
    player was last seen that way, or they never were."""
    seen = OuterRef(seen_field)
    return IsNull(seen, True) | GreaterThan(F("updated_at"), seen)


def due(now: datetime) -> Q:
    """SQL, over TurnEmailPreference: the player may be emailed at `now`. Opted
    in, active, a confirmed address, not emailed within `GAMES_TURN_EMAIL_EVERY`,
    and a game (whose turn: games.queries.turn_of, from games.rules) has waited on
    them more than `GAMES_TURN_EMAIL_AFTER` without them on the site since it
    began waiting (their last login and last page, accounts.middleware)."""
    waited = Game.objects.filter(
        turn_of(OuterRef("user")),
        _unseen_since_it_began_waiting("user__last_login"),
        _unseen_since_it_began_waiting("last_seen_at"),
        updated_at__lte=now - _after(),
    )
    confirmed = EmailAddress.objects.filter(user=OuterRef("user"), verified=True)
    return (
        _not_sent_since(now)
        & Q(enabled=True, user__is_active=True)
        & Q(Exists(confirmed))
        & Q(Exists(waited))
    )


def candidates(now: datetime) -> list[int]:
    """Ids of the users due an email at `now`: one query."""
    return list(
        TurnEmailPreference.objects.filter(due(now))
        .values_list("user_id", flat=True)
        .order_by("user_id")
    )


def _language_and_zone(user) -> tuple[str, str]:
    """`user`'s saved language and time zone (fetched with the user), else the
    site's language and UTC."""
    try:
        saved = user.preferences
    except Preferences.DoesNotExist:
        saved = Preferences()
    return (
        language_named(saved.language) or settings.LANGUAGE_CODE,
        zone_named(saved.time_zone) or "UTC",
    )


def _name(player) -> str:
    return display_name(player) if player is not None else open_side()


@transaction.atomic
def send_turn_email(*, user_id: int, now: datetime) -> bool:
    """Queue `user_id`'s email if it is due at `now`; True if it was. Asked
    again under the preference's lock: another run, or the player, may have
    changed it since `candidates` looked."""
    preference = (
        TurnEmailPreference.objects.select_for_update(of=("self",))
        # With the player's language and zone, in the same query.
        .select_related("user", "user__preferences")
        .filter(due(now), user_id=user_id)
        .first()
    )
    if preference is None:
        return False
    user = preference.user
    address = (
        EmailAddress.objects.filter(user=user, verified=True)
        .order_by("-primary", "id")
        .first()
    )
    if address is None:  # unconfirmed or removed since due() looked
        return False
    games = list(Game.objects.waiting_on(user))
    language, zone = _language_and_zone(user)
    url = unsubscribe_url(user.pk)
    context = {
        "user": user,
        "games": [
            {
                "player_x_name": _name(game.player_x),
                "player_o_name": _name(game.player_o),
                "url": settings.SITE_URL + game.get_absolute_url(),
            }
            for game in games
        ],
        "unsubscribe_url": url,
        "account_url": settings.SITE_URL + reverse("account_change_password"),
    }
    with translation.override(language), timezone.override(zone):
        subject = render_to_string("account/email/your_turn_subject.txt", context)
        body = render_to_string("account/email/your_turn_message.txt", context)
    EmailMessage(
        subject=subject.strip().replace("\n", " "),
        body=body,
        to=[address.email],
        headers={
            "List-Unsubscribe": f"<{url}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    ).send()
    preference.last_sent_at = now
    preference.save(update_fields=["last_sent_at"])
    return True


def send_due_turn_emails(*, now: datetime | None = None) -> int:
    """Queue every email due at `now`; how many."""
    now = now or timezone.now()
    return sum(send_turn_email(user_id=pk, now=now) for pk in candidates(now))


# Skipped, not queued again: the run going on does this run's work.
STILL_RUNNING = "skipped: another run is still going"


@periodic.every(RUN_EVERY, "turn-emails")
@task
def send_turn_emails() -> str:
    with running_alone("turn-emails") as alone:
        if not alone:
            return STILL_RUNNING
        return f"{send_due_turn_emails()} queued"
