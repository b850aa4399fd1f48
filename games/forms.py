"""Input parsing only: the legality of a move is games.rules' business."""

from django import forms
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.forms import (
    PasswordChangeForm,
    UserChangeForm,
    UserCreationForm,
)
from django.views.decorators.debug import sensitive_variables

from . import rules
from .records import RESULT_FILTERS
from .services import SIDES


def player_named(username: str):
    """The user called `username`; None for a blank name; a form error otherwise."""
    if not username:
        return None
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise forms.ValidationError(
            "There is no player called “%(username)s”.",
            params={"username": username},
        ) from None


def parse_digits(text: str, max_digits: int) -> int | None:
    """`text` as a whole number when it is plain ASCII digits (no sign, decimal,
    exponent or other script), at most `max_digits` of them; else None. The one
    number parser for forms and the live streams' versions."""
    if text.isascii() and text.isdigit() and len(text) <= max_digits:
        return int(text)
    return None


class StrictIntegerField(forms.IntegerField):
    """Plain ASCII digits only: no signs, decimals, exponents or other scripts."""

    def __init__(self, *, max_digits: int = 3, **kwargs):
        self.max_digits = max_digits
        super().__init__(**kwargs)

    def to_python(self, value):
        if value in self.empty_values:
            return None
        number = parse_digits(str(value).strip(), self.max_digits)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


CELL_ERROR = "Choose a cell on the board: row and column must be 0, 1 or 2."


def cell_field() -> StrictIntegerField:
    messages = dict.fromkeys(
        ("required", "invalid", "min_value", "max_value"), CELL_ERROR
    )
    return StrictIntegerField(min_value=0, max_value=2, error_messages=messages)


class MoveForm(forms.Form):
    row = cell_field()
    col = cell_field()
    ply = StrictIntegerField(
        min_value=0,
        max_value=9,
        required=False,
        error_messages=dict.fromkeys(
            ("invalid", "min_value", "max_value"),
            "ply must be the number of moves on the board you saw (0 to 9).",
        ),
    )


class NewGameForm(forms.Form):
    opponent = forms.CharField(
        max_length=150,
        required=False,
        help_text="Leave blank for an open game anyone may join; "
        "your own username to play both sides.",
    )
    side = forms.ChoiceField(
        choices=[("x", "X (moves first)"), ("o", "O"), ("random", "Random")],
        required=False,
        error_messages={"invalid_choice": "Choose a side: x, o or random."},
    )

    invite = forms.BooleanField(
        required=False,
        help_text="An invitation link to send to someone, instead of an open game "
        "anyone may join.",
    )

    def clean_side(self) -> str:
        return self.cleaned_data["side"] or SIDES[0]

    def clean(self):
        data = super().clean()
        if data.get("invite") and data.get("opponent") is not None:
            raise forms.ValidationError(
                "Leave the opponent blank to invite someone by link."
            )
        return data

    def clean_opponent(self):
        opponent = player_named(self.cleaned_data["opponent"].strip())
        if opponent is not None and not opponent.is_active:
            raise forms.ValidationError(
                "“%(username)s” has closed their account: choose another opponent.",
                params={"username": opponent.get_username()},
            )
        return opponent


PLY_ERROR = "ply must be a whole number of moves, from 0 to the number played."


class ReplayForm(forms.Form):
    """`?ply=N` on a game page; whether N was played is checked against the game."""

    ply = StrictIntegerField(
        min_value=0,
        max_value=rules.CELLS,
        error_messages=dict.fromkeys(
            ("required", "invalid", "min_value", "max_value"), PLY_ERROR
        ),
    )


def _cursor_field() -> StrictIntegerField:
    return StrictIntegerField(
        required=False,
        min_value=1,
        max_digits=18,
        error_messages=dict.fromkeys(
            ("invalid", "min_value"), "That page link is not valid."
        ),
    )


class ArchiveForm(forms.Form):
    """Filters and the page cursor of the game archive (all from the query string)."""

    result = forms.ChoiceField(
        choices=[("", "Any result")]
        + [(value, label) for value, (label, _) in RESULT_FILTERS.items()],
        required=False,
        error_messages={
            "invalid_choice": "Filter by result: "
            + ", ".join(RESULT_FILTERS)
            + " (or leave it empty)."
        },
    )
    opponent = forms.CharField(max_length=150, required=False, strip=True)
    before = _cursor_field()
    after = _cursor_field()

    def clean_opponent(self):
        return player_named(self.cleaned_data["opponent"])

    def clean(self):
        data = super().clean()
        if data.get("before") and data.get("after"):
            raise forms.ValidationError("That page link is not valid.")
        return data


# -- accounts ------------------------------------------------------------------

EMAIL_TAKEN = "Another account already uses this email address."
WRONG_PASSWORD = "That is not your current password."


def email_field(label: str) -> forms.EmailField:
    return forms.EmailField(
        label=label,
        required=False,
        max_length=254,
        help_text="Only used to send you a password-reset link; nobody sees it.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )


def unique_email(email: str, *, owner=None) -> str:
    """`email` normalised (domain in lower case), or a form error when another
    account has it, in any case. The database enforces the same rule (a unique
    index on LOWER(email), migration 0005_accounts): a racing sign-up still fails."""
    if not email:
        return ""
    email = get_user_model().objects.normalize_email(email)
    others = get_user_model().objects.filter(email__iexact=email)
    if owner is not None:
        others = others.exclude(pk=owner.pk)
    if others.exists():
        raise forms.ValidationError(EMAIL_TAKEN, code="email_taken")
    return email


@sensitive_variables("password")
def confirm_password(request, user, password: str, message: str) -> None:
    """A form error unless `password` is `user`'s. Checked through authenticate(),
    so django-axes counts a wrong one as a failed login: guesses from a stolen
    session meet the same limit (and 429 page) as guesses at the login form."""
    confirmed = authenticate(request, username=user.get_username(), password=password)
    if confirmed is None or confirmed.pk != user.pk:
        raise forms.ValidationError(message, code="password_incorrect")


class SignupForm(UserCreationForm):
    email = email_field("Email address (optional)")

    class Meta(UserCreationForm.Meta):
        fields = ["username", "email"]

    def clean_email(self) -> str:
        return unique_email(self.cleaned_data["email"])


class PasswordConfirmedForm(forms.Form):
    """A change to `user`'s account that asks for their password again."""

    password = forms.CharField(
        label="Your current password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, user, request, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.request = request

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        confirm_password(self.request, self.user, password, WRONG_PASSWORD)
        return password


class EmailForm(PasswordConfirmedForm):
    email = email_field("Email address")
    field_order = ["email", "password"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, user=user, initial={"email": user.email}, **kwargs)
        self.fields["email"].help_text += " Leave it blank to remove it."

    def clean_email(self) -> str:
        return unique_email(self.cleaned_data["email"], owner=self.user)

    def save(self):
        self.user.email = self.cleaned_data["email"]
        self.user.save(update_fields=["email"])
        return self.user


class CloseAccountForm(PasswordConfirmedForm):
    pass


class CheckedPasswordChangeForm(PasswordChangeForm):
    """Django's password change, with the old password checked like a login
    (confirm_password)."""

    def __init__(self, user, *args, request, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        old_password = self.cleaned_data["old_password"]
        confirm_password(
            self.request,
            self.user,
            old_password,
            self.error_messages["password_incorrect"],
        )
        return old_password


class PlayerChangeForm(UserChangeForm):
    """The admin's user form: an email address another account has is an error
    on the form, not a 500 from the database's unique index."""

    def clean_email(self) -> str:
        return unique_email(self.cleaned_data["email"], owner=self.instance)
