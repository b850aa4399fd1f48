"""allauth's adapter with what this site changes: the client address for the
limits, the password check of sensitive actions counted like a login, and no
confirmation link for an address someone else has confirmed."""

import logging

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied

from . import account_mail
from .client import client_ip

logger = logging.getLogger(__name__)


def pause_text(what: str) -> str:
    minutes = settings.LOGIN_COOLOFF_MINUTES
    return (
        f"Too many {what} for this account or from your network, so they are "
        f"paused for {minutes} minute{'s' if minutes != 1 else ''}. "
        "Please wait and try again."
    )


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
            raise PermissionDenied("Unable to determine the client's address.")
        return ip

    def validation_error(self, code: str, *args):
        if code == "too_many_login_attempts":
            return forms.ValidationError(pause_text("failed logins"), code=code)
        return super().validation_error(code, *args)

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
        learns from an error which mails go out)."""
        message = account_mail.build(
            account_mail.references(template_prefix, email, context)
        )
        if message is None:
            return
        try:
            message.send()
        except OSError as error:  # smtplib's errors and refused connections
            logger.warning("Could not send %s: %r", template_prefix, error)

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
