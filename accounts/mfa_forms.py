"""allauth.mfa's passkey forms, refusing a credential that is not one with the
form's error instead of a 500: allauth hands the browser's answer to fido2, and
lets some of fido2's refusals of a malformed one through (a missing field is a
KeyError, a broken attestation a ValueError; seen with hostile input)."""

from allauth.mfa.adapter import get_adapter
from allauth.mfa.webauthn import forms

MALFORMED = (KeyError, TypeError, ValueError)


def incorrect():
    return get_adapter().validation_error("incorrect_code")


class AddWebAuthnForm(forms.AddWebAuthnForm):
    def clean(self):
        try:
            return super().clean()
        except MALFORMED as error:
            raise incorrect() from error


class AuthenticateWebAuthnForm(forms.AuthenticateWebAuthnForm):
    def clean_credential(self):
        try:
            return super().clean_credential()
        except MALFORMED as error:
            raise incorrect() from error


class LoginWebAuthnForm(forms.LoginWebAuthnForm):
    def clean_credential(self):
        try:
            return super().clean_credential()
        except MALFORMED as error:
            raise incorrect() from error
