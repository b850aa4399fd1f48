"""allauth.mfa's adapter with what this site changes: passkeys belong to the
site's own name (DJANGO_SITE_URL), whatever Host header a request carried, and
every change to a second factor mails its owner a notice (send_notice, which
allauth reaches through the account adapter's send_notification_mail)."""

from urllib.parse import urlsplit

from allauth.account.models import EmailAddress
from allauth.mfa.adapter import DefaultMFAAdapter
from django.conf import settings
from django.utils import timezone

SITE_NAME = "tictactoe"
# How much of the browser's User-Agent header a notice quotes.
USER_AGENT_SHOWN = 200


def confirmed_address(user) -> str | None:
    """Where a notice goes: a confirmed address only (an unconfirmed one may be
    anybody's)."""
    return (
        EmailAddress.objects.filter(user_id=user.pk, verified=True)
        .order_by("-primary")
        .values_list("email", flat=True)
        .first()
    )


class MFAAdapter(DefaultMFAAdapter):
    def get_public_key_credential_rp_entity(self) -> dict[str, str]:
        """A passkey is bound to this name: the site's as players reach it, so
        that one made on it works wherever the site is reached by that name
        (and a browser on another name, or an IP address, is refused)."""
        return {"id": urlsplit(settings.SITE_URL).hostname, "name": SITE_NAME}


def send_notice(account_adapter, template_prefix: str, user, context=None) -> None:
    """The notice of a second factor set up or removed, or of recovery codes made
    again: to the owner's confirmed address, through the mail queue (the account
    adapter's send_mail), whatever ACCOUNT_EMAIL_NOTIFICATIONS says for allauth's
    other notices."""
    email = confirmed_address(user)
    if not email:
        return
    request = account_adapter.request
    # What the browser names itself, or "" (the notice then says it sent no name).
    user_agent = request.META.get("HTTP_USER_AGENT", "")
    account_adapter.send_mail(
        template_prefix,
        email,
        {
            "timestamp": timezone.now(),
            "ip": account_adapter.get_client_ip(request),
            "user_agent": user_agent[:USER_AGENT_SHOWN],
            **(context or {}),
        },
    )
