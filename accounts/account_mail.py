"""allauth's mails, built from references, where the site says what links are.

`references` turns what allauth hands the adapter (a template and a context with
the user, the link and its key, the request) into JSON that holds no secret and
nothing of the request: which mail, to whom, whose account or address, and the
plain values the text shows (an IP address, a time). `build` makes the message
from them: on the request's side for the mailer, and again in the task worker,
which the queue hands only the references (tictactoe_site.jobs.mail). So a reset or
confirmation link exists only in the mail that leaves, never in the task table.

A mail is in its recipient's language and time zone (accounts.middleware)
when their account has them; else in the language of the request that asked
for it (carried in the references), else settings.LANGUAGE_CODE; times in UTC.

Every link starts with DJANGO_SITE_URL (settings.SITE_URL), never with the Host
header of the request that caused the mail: allauth builds its links and its
`current_site` from that header.
"""

from datetime import datetime
from types import SimpleNamespace
from urllib.parse import urlsplit

from allauth.account.adapter import get_adapter
from allauth.account.forms import default_token_generator
from allauth.account.models import EmailAddress, EmailConfirmationHMAC
from allauth.account.utils import user_pk_to_url_str, user_username
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone, translation

from tictactoe_site.jobs.mail import built_by_worker
from tictactoe_site.lib.times import local_text

from .middleware import language_named, zone_named
from .models import Preferences

RESET = "account/email/password_reset_key"
CONFIRMATIONS = (
    "account/email/email_confirmation",
    "account/email/email_confirmation_signup",
)
# Context entries `build` makes again: the request, the objects referred to, the
# site and every link (allauth's are built from the Host header).
REBUILT = frozenset(
    {
        "request",
        "user",
        "email_address",
        "email",
        "current_site",
        "signup_url",
        "password_reset_url",
        "activate_url",
        "key",
        "uid",
        "username",
    }
)


def site_url(name: str, *args, **kwargs) -> str:
    return settings.SITE_URL + reverse(name, args=args, kwargs=kwargs)


def references(template_prefix: str, email: str, context: dict) -> dict:
    """JSON for `build`: no link, key or code, nothing from the request."""
    if "code" in context:
        # A code cannot be made again from a reference (allauth keeps it in the
        # session): login, reset and verification by code stay off.
        raise ValueError(f"{template_prefix}: a mail with a code cannot be queued.")
    refs = {
        "build": "account",
        "template": template_prefix,
        "to": email,
        # The language the mail was asked for in: the recipient's, if they
        # have not chosen one (accounts.middleware).
        "language": translation.get_language(),
    }
    if context.get("email_address") is not None:
        refs["address"] = context["email_address"].pk
    elif context.get("user") is not None:
        refs["user"] = context["user"].pk
    values, times = {}, {}
    for name, value in context.items():
        if name in REBUILT:
            continue
        if isinstance(value, datetime):
            times[name] = value.isoformat()
        elif value is None or isinstance(value, str | int | float | bool):
            values[name] = value
        else:
            raise TypeError(f"{template_prefix}: {name} cannot be queued.")
    refs["values"] = values
    refs["times"] = times
    return refs


def _reset_link(user, email: str) -> dict | None:
    """A fresh reset link, if `email` is still a confirmed address of the
    active `user` (as accounts.forms.ResetPasswordForm chose it)."""
    if not (
        user.is_active
        and EmailAddress.objects.filter(
            user=user, email__iexact=email, verified=True
        ).exists()
    ):
        return None
    uid = user_pk_to_url_str(user)
    key = default_token_generator.make_token(user)
    return {
        "uid": uid,
        "key": key,
        "password_reset_url": site_url(
            "account_reset_password_from_key", uidb36=uid, key=key
        ),
        "username": user_username(user),
    }


def _confirmation_link(address: EmailAddress) -> dict:
    key = EmailConfirmationHMAC(address).key
    return {"key": key, "activate_url": site_url("account_confirm_email", key)}


def _recipient(refs: dict, user) -> int | None:
    """The account the mail goes to: the one it is about, or for a mail about
    no account (someone used an address already confirmed) the account that
    confirmed the address."""
    if user is not None:
        return user.pk
    return (
        EmailAddress.objects.filter(email__iexact=refs["to"], verified=True)
        .values_list("user_id", flat=True)
        .first()
    )


def _language_and_zone(refs: dict, user) -> tuple[str, str | None]:
    """The recipient's saved language and zone; else the language of the
    request (the references') or the site's, and UTC."""
    recipient = _recipient(refs, user)
    saved = (
        Preferences.objects.filter(user_id=recipient)
        .values_list("language", "time_zone")
        .first()
        if recipient is not None
        else None
    )
    language, zone = saved or ("", "")
    language = (
        language_named(language)
        or language_named(refs.get("language") or "")
        or settings.LANGUAGE_CODE
    )
    return language, zone_named(zone)


def build(refs: dict):
    """The mail `refs` stands for, with fresh links, in its recipient's
    language and zone; None when what it refers to changed (the account or
    address is gone, the address no longer the account's confirmed one): then
    nothing is sent."""
    template, email = refs["template"], refs["to"]
    domain = urlsplit(settings.SITE_URL).netloc
    context = {
        "email": email,
        # What allauth's texts name the site by (without django.contrib.sites,
        # allauth takes the request's Host).
        "current_site": SimpleNamespace(domain=domain, name=domain),
        "signup_url": site_url("account_signup"),
        "password_reset_url": site_url("account_reset_password"),
        **refs["values"],
    }
    if "address" in refs:
        address = (
            EmailAddress.objects.select_related("user")
            .filter(pk=refs["address"], email=email)
            .first()
        )
        if address is None:
            return None
        context["user"] = address.user
        if template in CONFIRMATIONS:
            context |= _confirmation_link(address)
    elif "user" in refs:
        user = get_user_model().objects.filter(pk=refs["user"]).first()
        if user is None:
            return None
        context["user"] = user
        if template == RESET:
            link = _reset_link(user, email)
            if link is None:
                return None
            context |= link
    if template in (RESET, *CONFIRMATIONS) and "key" not in context:
        raise ValueError(f"{template}: no reference to make its link from.")
    language, zone = _language_and_zone(refs, context.get("user"))
    with translation.override(language), timezone.override(zone or "UTC"):
        # A time (a notice's "Date:") as the recipient reads it, zone named.
        for name, value in refs["times"].items():
            context[name] = local_text(datetime.fromisoformat(value))
        message = get_adapter().render_mail(template, email, context)
    return built_by_worker(message, refs)
