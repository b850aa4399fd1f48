"""allauth's adapter with what this site changes: the client address for the
limits, failed logins counted per account whatever the Host header, the password
check of sensitive actions counted like a login, a new password clearing the
account's count of failed logins (never the client address's), and no
confirmation link for an address someone else has confirmed."""

import logging
import unicodedata

from allauth.account import app_settings
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core.internal import ratelimit
from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from tictactoe_site.jobs import mail

from . import account_mail, usernames
from .client import client_ip
from .mfa_adapter import send_notice

logger = logging.getLogger(__name__)


def pause_text() -> str:
    minutes = settings.LOGIN_COOLOFF_MINUTES
    return ngettext(
        "Too many failed logins for this account or from your network, so they "
        "are paused for %(minutes)d minute. Please wait and try again.",
        "Too many failed logins for this account or from your network, so they "
        "are paused for %(minutes)d minutes. Please wait and try again.",
        minutes,
    ) % {"minutes": minutes}


def confirmed_by_someone_else(address: EmailAddress) -> bool:
    return (
        EmailAddress.objects.filter(email__iexact=address.email, verified=True)
        .exclude(user_id=address.user_id)
        .exists()
    )


class AccountAdapter(DefaultAccountAdapter):
    def get_client_ip(self, request) -> str:
        ip = client_ip(request)
        if ip is None:
            raise PermissionDenied(_("Unable to determine the client's address."))
        return ip

    def get_http_user_agent(self, request) -> str:
        """The browser's name for itself, or "": a notice then says, in the
        reader's language, that it sent none (allauth writes "Unspecified")."""
        return request.META.get("HTTP_USER_AGENT", "")

    def _get_login_attempts_cache_key(self, request, **credentials) -> str:
        """What failed logins count under: the login alone, folded as usernames
        are compared (NFKC, case folded). allauth prefixes the site's domain,
        which without django.contrib.sites is the request's Host header, so each
        spelling of the host (`localhost`, `LOCALHOST`, `localhost:1`, ...) got
        fresh guesses at one account. allauth's one seam for this key
        (tests/accounts/test_accounts_limits.py fails if it is renamed)."""
        login = credentials.get("email", credentials.get("username", ""))
        return unicodedata.normalize("NFKC", login).casefold()

    def set_password(self, user, password: str) -> None:
        """A new password (a reset, or a change, which asks for the current
        one) clears the account's count of failed logins: they guessed at the
        old one. Only the counts per login: a client address's only expires."""
        super().set_password(user, password)
        rates = app_settings.RATE_LIMITS.get("login_failed") or ""
        per_login = [rate for rate in rates.split(",") if rate.strip().endswith("/key")]
        ratelimit.clear(
            self.request,
            app="allauth.account",
            action="login_failed",
            config={"login_failed": ",".join(per_login)},
            key=self._get_login_attempts_cache_key(
                self.request, username=user.get_username()
            ),
        )

    def _delete_login_attempts_cached_email(self, request, **credentials) -> None:
        """Nothing: allauth's clearing after a reset, of the counts of logins by
        email (this site logs in by username) and of the client address's count
        too. The account's count is cleared by set_password."""

    def validation_error(self, code: str, *args):
        if code == "too_many_login_attempts":
            return forms.ValidationError(pause_text(), code=code)
        return super().validation_error(code, *args)

    def clean_username(self, username: str, shallow: bool = False) -> str:
        """allauth's checks of the name, then ours of its uniqueness in place
        of allauth's case-insensitive lookup, which folds only ASCII on SQLite:
        no account may have a name with the same key (accounts.usernames)."""
        username = super().clean_username(username, shallow=True)
        if not shallow:
            try:
                usernames.check_available(username)
            except forms.ValidationError as error:
                if error.code == "username_taken":
                    raise self.validation_error("username_taken") from None
                raise
        return username

    def reauthenticate(self, user, password: str) -> bool:
        """The password check of a sensitive action (changing the address or the
        password, closing the account): through authenticate(), by username, so
        that a wrong password counts against the same limits as a failed login
        for that username, and from that client address."""
        confirmed = self.authenticate(
            self.request, username=user.get_username(), password=password
        )
        return confirmed is not None and confirmed.pk == user.pk

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        """Every allauth mail, built from references with the site's links
        (accounts.account_mail), so that the queue stores no link and no Host
        header reaches a mail; through Django's mail API. A mail server that
        fails is logged, and the page is the same as when it works (no one
        learns from an error which mails go out). The queue takes the
        references unbuilt (tictactoe_site.jobs.mail.send_references), so a request
        costs the same whichever mail it sends."""
        references = account_mail.references(template_prefix, email, context)
        try:
            mail.send_references(references)
        except OSError as error:  # smtplib's errors and refused connections
            logger.warning("Could not send %s: %r", template_prefix, error)

    def send_notification_mail(self, template_prefix, user, context=None, email=None):
        """allauth's security notices: those of second factors (allauth.mfa)
        always (accounts.mfa_adapter), the others as ACCOUNT_EMAIL_NOTIFICATIONS
        says."""
        if template_prefix.startswith("mfa/"):
            send_notice(self, template_prefix, user, context)
        else:
            super().send_notification_mail(template_prefix, user, context, email)

    def send_confirmation_mail(self, request, emailconfirmation, signup: bool) -> None:
        """A confirmation link, unless another account has confirmed the address:
        then its owner gets a notice that someone tried to use it. Either way one
        mail goes out, and the page that asked for it is the same. The link is
        made from the address when the mail is built (an HMAC key: allauth's
        default), not taken from the request."""
        address = emailconfirmation.email_address
        if confirmed_by_someone_else(address):
            self.send_mail("account/email/address_in_use", address.email, {})
        else:
            template = "account/email/email_confirmation" + (
                "_signup" if signup else ""
            )
            self.send_mail(template, address.email, {"email_address": address})
