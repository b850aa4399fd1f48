"""'Your turn' emails: a player who opted in (TurnEmailPreference) and has a
confirmed address gets one email listing every game waiting on them, once a
game has waited more than `GAMES_TURN_EMAIL_AFTER` seconds without them being
on the site since it began waiting; at most one per `GAMES_TURN_EMAIL_EVERY`.

`send_turn_emails` is the task the worker runs about once a minute
(tictactoe_site.heartbeat queues it): no cron. Each email is queued (the default
mailer, tictactoe_site.mail) in the transaction that records it as sent, so a
worker stopped between the two can neither lose it nor send it twice.
"""

from datetime import datetime, timedelta

from allauth.account.models import EmailAddress
from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Q
from django.tasks import task
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from games.models import Game

from .models import TurnEmailPreference

RUN_EVERY = timedelta(minutes=1)
# Signed for this one purpose: no other signed value of the site unsubscribes.
UNSUBSCRIBE_SALT = "accounts.turn_emails.unsubscribe"


def unsubscribe_url(user_id: int) -> str:
    token = signing.dumps(user_id, salt=UNSUBSCRIBE_SALT)
    return settings.SITE_URL + reverse("turn_email_unsubscribe", args=[token])


def unsubscriber(token: str) -> int:
    """The user id an unsubscribe token was made for; signing.BadSignature if
    it was not made by `unsubscribe_url`."""
    return signing.loads(token, salt=UNSUBSCRIBE_SALT)


def set_turn_emails(*, user, enabled: bool) -> None:
    TurnEmailPreference.objects.update_or_create(
        user=user, defaults={"enabled": enabled}
    )


def unsubscribe(*, user_id: int) -> None:
    TurnEmailPreference.objects.filter(user_id=user_id).update(enabled=False)


def has_confirmed_address(user) -> bool:
    return EmailAddress.objects.filter(user=user, verified=True).exists()


def _after() -> timedelta:
    return timedelta(seconds=settings.GAMES_TURN_EMAIL_AFTER)


def _every() -> timedelta:
    return timedelta(seconds=settings.GAMES_TURN_EMAIL_EVERY)


def _not_sent_since(now: datetime) -> Q:
    return Q(last_sent_at__isnull=True) | Q(last_sent_at__lte=now - _every())


def candidates(now: datetime) -> list[int]:
    """Ids of the users who may be due an email at `now`."""
    return list(
        TurnEmailPreference.objects.filter(
            _not_sent_since(now),
            enabled=True,
            user__is_active=True,
            user__emailaddress__verified=True,
        )
        .values_list("user_id", flat=True)
        .distinct()
        .order_by("user_id")
    )


@transaction.atomic
def send_turn_email(*, user_id: int, now: datetime) -> bool:
    """Queue `user_id`'s email if it is due at `now`; True if it was."""
    preference = (
        TurnEmailPreference.objects.select_for_update()
        .select_related("user")
        .filter(_not_sent_since(now), user_id=user_id, enabled=True)
        .first()
    )
    if preference is None:  # sent or unsubscribed since candidates() looked
        return False
    user = preference.user
    address = (
        EmailAddress.objects.filter(user=user, verified=True)
        .order_by("-primary", "id")
        .first()
    )
    if address is None or not user.is_active:
        return False
    seen = max(
        (t for t in (user.last_login, preference.last_seen_at) if t), default=None
    )
    games = list(Game.objects.waiting_on(user))
    if not any(
        game.updated_at <= now - _after() and (seen is None or seen < game.updated_at)
        for game in games
    ):
        return False
    url = unsubscribe_url(user.pk)
    context = {
        "user": user,
        "games": [
            (game, settings.SITE_URL + game.get_absolute_url()) for game in games
        ],
        "unsubscribe_url": url,
        "account_url": settings.SITE_URL + reverse("account_change_password"),
    }
    EmailMessage(
        subject=render_to_string("account/email/your_turn_subject.txt", context)
        .strip()
        .replace("\n", " "),
        body=render_to_string("account/email/your_turn_message.txt", context),
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


@task
def send_turn_emails() -> str:
    return f"{send_due_turn_emails()} queued"
