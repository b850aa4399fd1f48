"""allauth's forms where this site asks for more: login by any spelling of the
name, a password check that counts like a login, resets only to confirmed
addresses, and the form to close an account; a player's language and time
zone; the admin's user forms, which refuse another spelling of a taken name."""

from allauth.account import forms as allauth_forms
from allauth.account.adapter import get_adapter
from django import forms
from django.conf import settings
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _

from . import usernames
from .zone_menu import zone_choices

WRONG_PASSWORD = _("That is not your current password.")
JUST_TAKEN = _("That username was just taken: choose another.")
# The optional address of sign-up and of keeping a guest account.
EMAIL_LABEL = _("Email address (optional)")
EMAIL_HELP = _(
    "Only used, once you confirm it, to send you a password-reset link; nobody sees it."
)


def check_password(user, password: str) -> None:
    """A form error unless `password` is `user`'s, checked by the adapter's
    reauthenticate(): a wrong one counts as a failed login."""
    if not get_adapter().reauthenticate(user, password):
        raise forms.ValidationError(WRONG_PASSWORD, code="incorrect_password")


class LoginForm(allauth_forms.LoginForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The page is for logging in: the cursor starts in the username.
        self.fields["login"].widget.attrs["autofocus"] = True

    def clean_login(self) -> str:
        """The account's name as stored, whichever spelling of it was typed
        (`ÉMILE`, `ﬁsh`: accounts.usernames), so that allauth finds the one
        account and counts every spelling's failures as that account's."""
        return usernames.account_name(super().clean_login())


class UsernameJustTaken(Exception):
    """A sign-up lost the race for its username (the form has the error)."""


class SignupForm(allauth_forms.SignupForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        email = self.fields["email"]
        email.label = EMAIL_LABEL
        email.help_text = EMAIL_HELP

    def try_save(self, request):
        """The account and its address in one transaction; a username that a
        simultaneous sign-up took in any casing is refused by the database."""
        try:
            with transaction.atomic():
                return super().try_save(request)
        except IntegrityError:
            self.add_error("username", JUST_TAKEN)
            raise UsernameJustTaken() from None


class ChangePasswordForm(allauth_forms.ChangePasswordForm):
    def clean_oldpassword(self) -> str:
        password = self.cleaned_data.get("oldpassword", "")
        check_password(self.user, password)
        return password


class ResetPasswordForm(allauth_forms.ResetPasswordForm):
    """A reset link goes only to an address its owner confirmed, of an account
    (not a guest's); anything else gets allauth's "no account with this
    address" mail, so the page and the time it takes are the same either way."""

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].lower()
        self.users = list(
            get_user_model().objects.filter(
                is_active=True,
                emailaddress__email=email,
                emailaddress__verified=True,
                # A guest has no password to reset (accounts.keep_account).
                guest__isnull=True,
            )
        )
        return self.cleaned_data["email"]


class CloseAccountForm(forms.Form):
    password = forms.CharField(
        label=_("Your current password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        check_password(self.user, password)
        return password


class PrivateGamesForm(forms.Form):
    private = forms.BooleanField(
        required=False,
        label=_("Make every new game I start private"),
        help_text=_(
            "A private game is seen only by its two players; a public one by "
            "anyone with its link once both players are in. Each game's page "
            "can change it."
        ),
    )


class TurnEmailForm(forms.Form):
    enabled = forms.BooleanField(
        required=False, label=_("Email me when a game has waited on my move")
    )


# The refusals of the language menu and of the browser's zone
# (accounts.views.preferences), in the same words.
NOT_A_LANGUAGE = _("That is not one of the languages this site is offered in.")
NOT_A_ZONE = _(
    "That is not the name of a time zone, such as Europe/Paris or America/Sao_Paulo."
)


class LanguageSelect(forms.Select):
    """Each language named in itself, marked as such (`lang`), as the
    language menu of base.html names them."""

    def create_option(self, name, value, *args, **kwargs):
        option = super().create_option(name, value, *args, **kwargs)
        if value:
            option["attrs"]["lang"] = value
        return option


def language_choices() -> list[tuple[str, str]]:
    return [("", _("Your browser's language")), *settings.LANGUAGES]


class PreferencesForm(forms.Form):
    """The account page "Language and time": blank is "not chosen" for each."""

    language = forms.ChoiceField(
        label=_("Language"),
        required=False,
        choices=language_choices,
        widget=LanguageSelect,
        help_text=_("The language of the pages and of the emails we send you."),
        error_messages={"invalid_choice": NOT_A_LANGUAGE},
    )
    time_zone = forms.ChoiceField(
        label=_("Time zone"),
        required=False,
        choices=zone_choices,
        help_text=_("Every time on the site is shown in this zone, named."),
        error_messages={"invalid_choice": NOT_A_ZONE},
    )


class AdminUserCreationForm(auth_forms.AdminUserCreationForm):
    def clean_username(self):
        username = super().clean_username()
        if username:
            usernames.check_available(username)
        return username


class AdminUserChangeForm(auth_forms.UserChangeForm):
    def clean_username(self):
        username = self.cleaned_data["username"]
        usernames.check_available(username, user=self.instance)
        return username
