"""Guest accounts: made on the spot from an invitation or open-game link, so an
invited friend plays at once (docs/playing.md, 9).

A guest is an ordinary user with an `accounts.Guest` row: a name (checked as
sign-up checks it: allauth's validators, then one name per person whatever its
case or Unicode spelling), no password (`set_unusable_password`: no login by
password, no reset) and no email address. Every page marks a guest's name
(games.presentation.display_name), and a guest starts no game of their own, adds no
address and sets no password until they keep the account: what they may do is
play the games they joined and their rematches, watch, block, and accept more
links (`refused`, `GUEST_REFUSAL`); the account pages that need a password
send a guest to keep the account first (`keep_first`).

`play_as_guest` makes the account and joins the game in one transaction: a join
refused (the link used meanwhile, a block) leaves no account behind.
"""

import functools
import ipaddress
import secrets
from collections.abc import Callable
from datetime import timedelta

from allauth.account.adapter import get_adapter
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from tictactoe_site.lib.error_pages import error_page

from . import rate_limits, refusals, usernames
from .client import client_ip
from .models import Guest

# What a refused guest reads (403), on every page a guest may not use.
GUEST_REFUSAL = gettext_lazy(
    "Guests can play the games they joined and their rematches, watch, block "
    "and accept links. Keep this account (choose a password) to start games, "
    "add an email address or download your data."
)

# Suggested names: "guest-" and a word and a number, one not taken.
SUGGESTION_WORDS = (
    "acorn",
    "badger",
    "comet",
    "dune",
    "ember",
    "fjord",
    "gecko",
    "heron",
    "iris",
    "juniper",
    "kiwi",
    "lark",
    "maple",
    "nova",
    "otter",
    "pebble",
    "quartz",
    "robin",
    "sparrow",
    "tulip",
)
SUGGESTION_TRIES = 5


def is_guest(user) -> bool:
    """Whether `user` is a guest. No query for users loaded with their guest
    row (the players of the game pages and lists, games.models), nor for an
    account with a usable password, which no guest has: of the signed-in
    users, only a guest costs one, once per request."""
    if not user.is_authenticated:
        return False
    loaded = user._meta.get_field("guest").is_cached(user)
    if not loaded and user.has_usable_password():
        return False
    return hasattr(user, "guest")


def suggest_name() -> str:
    """A free name such as "guest-otter42" for the name field."""
    for digits in range(2, 2 + SUGGESTION_TRIES):
        name = (
            f"guest-{secrets.choice(SUGGESTION_WORDS)}{secrets.randbelow(10**digits)}"
        )
        if usernames.holder(usernames.username_key(name)) is None:
            return name
    return f"guest-{secrets.token_hex(6)}"


def clean_name(name: str) -> str:
    """The name as sign-up would accept it, or a ValidationError with sign-up's
    message (allauth's validators and accounts.adapter's uniqueness)."""
    return get_adapter().clean_username(name)


def create_guest(*, name: str):
    """A new guest account named `name` (already cleaned): no password, no
    address. ValidationError if the name was taken meanwhile (the key row's
    unique constraint, inside the caller's transaction)."""
    try:
        with transaction.atomic():
            user = get_user_model()(username=name)
            user.set_unusable_password()
            user.save()
            Guest.objects.create(user=user)
    except IntegrityError:
        raise ValidationError(usernames.TAKEN, code="username_taken") from None
    return user


@transaction.atomic
def play_as_guest(*, name: str, join: Callable):
    """Make the guest `name` and let `join(user)` (a games service) take them
    into a game, in one transaction: the game, or the join's refusal (and then
    no account). `name` is checked as at sign-up (ValidationError)."""
    user = create_guest(name=clean_name(name))
    return user, join(user)


# -- the creation limit -----------------------------------------------------------


def _client_key(ip: str) -> str:
    """The address counted: an IPv6 client by its /64, as allauth's limits."""
    address = ipaddress.ip_address(ip)
    if address.version == 6:
        prefix = settings.ALLAUTH_RATE_LIMIT_IPV6_PREFIX
        return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
    return str(address)


def creation_wait(request) -> timedelta | None:
    """Count one guest name tried (taken, refused or made) from the request's
    client address; None within GAMES_GUEST_CREATE_LIMIT per
    GAMES_GUEST_CREATE_WINDOW, else the wait."""
    limit = settings.GAMES_GUEST_CREATE_LIMIT
    if not limit:
        return None
    ip = client_ip(request)
    key = f"accounts:guest_create:ip:{_client_key(ip) if ip else 'unknown'}"
    return rate_limits.hit(key, limit=limit, window=settings.GAMES_GUEST_CREATE_WINDOW)


def creation_refusal(wait: timedelta) -> str:
    limit = settings.GAMES_GUEST_CREATE_LIMIT
    window = refusals.wait_text(settings.GAMES_GUEST_CREATE_WINDOW)
    return ngettext(
        "%(count)d guest name was tried from your network in the last "
        "%(window)s. Please wait %(wait)s and try again, or log in.",
        "%(count)d guest names were tried from your network in the last "
        "%(window)s. Please wait %(wait)s and try again, or log in.",
        limit,
    ) % {"count": limit, "window": window, "wait": refusals.wait_text(wait)}


# -- what guests may not do -------------------------------------------------------


def refused(request):
    """The readable 403 a guest gets on a page that is not for guests."""
    return error_page(
        request, title=_("Not for guests"), message=GUEST_REFUSAL, status=403
    )


def keep_first(view):
    """Wrap an account page that needs a password or an address (setting or
    changing either, re-authenticating, the data download): a guest is sent to
    Keep this account instead (accounts.views.guests)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if is_guest(request.user):
            return redirect("account_keep")
        return view(request, *args, **kwargs)

    return wrapper
