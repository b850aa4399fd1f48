"""What allauth does not keep: a player's choice of your-turn emails, the
key that makes each username one of its kind (accounts.usernames), the counts
of the rate limits, which accounts are guests, and each player's language
and time zone."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class TurnEmailPreference(models.Model):
    """Opt-in to "your turn" emails (games.turn_emails), and what the job
    needs to send them at most once per `GAMES_TURN_EMAIL_EVERY` and never to
    someone who has been on the site since the game began waiting on them."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="turn_email",
    )
    enabled = models.BooleanField(default=False)
    # Written in the transaction that queues the email: a worker restarted
    # between the two cannot send it twice.
    last_sent_at = models.DateTimeField(null=True, blank=True)
    # When the user was last seen on a page (accounts.middleware), at most one
    # write per `SEEN_EVERY`.
    last_seen_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Turn emails of {self.user_id}: {'on' if self.enabled else 'off'}"


class RateLimitCount(models.Model):
    """The recent hits of one limit for one key (a client address, a username, a
    user), kept until `expires_at` (accounts.rate_limits). Nothing deletes a
    live row: expired ones are deleted by the task worker's housekeeping, by the
    index on `expires_at`."""

    key = models.TextField(primary_key=True)
    # allauth's list of hit times (seconds since the epoch), or its lock's True.
    value = models.JSONField(null=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.key


# A key is at most as long as a name may be: it can be longer than its name
# (ß folds to ss, ﷺ to 18 letters), and such a name is refused at sign-up.
KEY_MAX_LENGTH = 150


class UsernameKey(models.Model):
    """A user's name folded (accounts.usernames.username_key), unique: no two
    accounts have names that differ only in case or Unicode spelling. Kept by
    accounts.usernames at every save that sets or changes a name."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="username_key",
    )
    key = models.CharField(max_length=KEY_MAX_LENGTH)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key"], name="accounts_username_key_unique")
        ]

    def __str__(self) -> str:
        return self.key


class Guest(models.Model):
    """A guest account: made on the spot from an invitation or open-game link,
    without password or address (accounts.guests). The row goes when the guest
    keeps the account (accounts.keep_account: it becomes a normal one). It
    stays when the worker closes a guest after `GAMES_GUEST_MAX_IDLE_DAYS`
    without activity (tictactoe_site.jobs.housekeeping): the closed account's name
    then reads "bob (closed guest)"."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="guest",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The guest's activity: the creation, then every page they load, written at
    # most once per accounts.middleware.SEEN_EVERY (as TurnEmailPreference's
    # last_seen_at). Indexed: housekeeping looks for the idle ones by it.
    last_active_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["last_active_at"], name="accounts_guest_last_active")
        ]

    def __str__(self) -> str:
        return f"Guest {self.user_id}"


def language_codes() -> list[str]:
    """The languages the site ships (settings.LANGUAGES), by code."""
    return [code for code, _name in settings.LANGUAGES]


# Longer than any IANA name; Preferences.time_zone holds this many.
MAX_ZONE_NAME = 64


class Preferences(models.Model):
    """A player's language and time zone (accounts.middleware), read once at
    login into the session: pages ask the session, never this table. Blank
    means not chosen: the browser's language (Accept-Language, the language
    cookie), and a zone the page fills in from the browser once (UTC until
    then)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preferences",
    )
    language = models.CharField(
        _("language"), max_length=7, blank=True, choices=settings.LANGUAGES
    )
    # An IANA name (zoneinfo), validated by accounts.middleware.zone_named.
    time_zone = models.CharField(_("time zone"), max_length=MAX_ZONE_NAME, blank=True)
    # Every game this player starts is private (games reads it at creation:
    # new_games_private).
    new_games_private = models.BooleanField(
        _("new games private"), default=False, db_default=False
    )

    class Meta:
        verbose_name = _("preferences")
        verbose_name_plural = _("preferences")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(language__in=["", *language_codes()]),
                name="accounts_preferences_language_offered",
            )
        ]

    def __str__(self) -> str:
        return f"Preferences of {self.user_id}"


def new_games_private(user) -> bool:
    """Whether `user` asked for every game they start to be private."""
    return Preferences.objects.filter(user=user, new_games_private=True).exists()
