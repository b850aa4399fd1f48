"""Input parsing only: the legality of a move is games.rules' business."""

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy

from . import rules
from .player_stats import RESULT_FILTERS
from .services import SIDES


def player_named(username: str):
    """The user called `username`; None for a blank name; a form error otherwise."""
    if not username:
        return None
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise forms.ValidationError(
            gettext("There is no player called “%(username)s”."),
            params={"username": username},
        ) from None


def parse_digits(text: str, max_digits: int) -> int | None:
    """`text` as a whole number when it is plain ASCII digits (no sign, decimal,
    exponent or other script), at most `max_digits` of them; else None."""
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


# About the form's fields, which keep the rules' zero-based coordinates: only a
# request written by hand sees it (the page's buttons send valid cells), and it
# names no number, since people count rows and columns from 1.
CELL_ERROR = gettext_lazy("Choose a cell on the board.")


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
            gettext_lazy(
                "That move did not say which board you saw. Reload the page and "
                "try again."
            ),
        ),
    )


def username_input() -> forms.TextInput:
    """A field for someone else's username: the browser offers no autofill."""
    return forms.TextInput(attrs={"autocomplete": "off"})


class NewGameForm(forms.Form):
    """The lobby's form. Its widgets render every input; Django points each
    input's aria-describedby at its help text and, once refused, its error."""

    opponent = forms.CharField(
        label=gettext_lazy("Opponent's username"),
        max_length=150,
        required=False,
        widget=username_input(),
        help_text=gettext_lazy(
            "Blank: an open game anyone may join. Your own username: play both sides."
        ),
    )
    side = forms.ChoiceField(
        label=gettext_lazy("Your side"),
        choices=[
            ("x", gettext_lazy("X (moves first)")),
            ("o", "O"),
            ("random", pgettext_lazy("a side chosen at random", "Random")),
        ],
        initial="x",
        required=False,
        widget=forms.RadioSelect,
        error_messages={
            "invalid_choice": gettext_lazy("Choose a side: X, O or random.")
        },
    )

    invite = forms.BooleanField(
        label=gettext_lazy("Invite by link"),
        required=False,
        help_text=gettext_lazy(
            "With the opponent blank: a link to send to one person, "
            "not listed among open games."
        ),
    )

    def clean_side(self) -> str:
        return self.cleaned_data["side"] or SIDES[0]

    def clean(self):
        data = super().clean()
        if data.get("invite") and data.get("opponent") is not None:
            raise forms.ValidationError(
                gettext("Leave the opponent blank to invite someone by link.")
            )
        return data

    def clean_opponent(self):
        opponent = player_named(self.cleaned_data["opponent"].strip())
        if opponent is not None and not opponent.is_active:
            raise forms.ValidationError(
                gettext(
                    "“%(username)s” has closed their account: choose another opponent."
                ),
                params={"username": opponent.get_username()},
            )
        return opponent


PLY_ERROR = gettext_lazy(
    "A replay link names a move by its number, from 0 to the number played."
)


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
            ("invalid", "min_value"), gettext_lazy("That page link is not valid.")
        ),
    )


class ArchiveForm(forms.Form):
    """Filters and the page cursor of the game archive (all from the query string)."""

    result = forms.ChoiceField(
        label=gettext_lazy("Result"),
        choices=[("", gettext_lazy("Any result"))]
        + [(value, label) for value, (label, _) in RESULT_FILTERS.items()],
        required=False,
        error_messages={
            "invalid_choice": gettext_lazy(
                "Filter by one of the results in the list, or by none."
            )
        },
    )
    opponent = forms.CharField(
        label=gettext_lazy("Opponent's username"),
        max_length=150,
        required=False,
        strip=True,
        widget=username_input(),
    )
    before = _cursor_field()
    after = _cursor_field()

    @property
    def filters(self) -> list[forms.BoundField]:
        """The fields the archive's form shows; the page cursor is in its links."""
        return [self["result"], self["opponent"]]

    def clean_opponent(self):
        return player_named(self.cleaned_data["opponent"])

    def clean(self):
        data = super().clean()
        if data.get("before") and data.get("after"):
            raise forms.ValidationError(gettext("That page link is not valid."))
        return data


class GuestNameForm(forms.Form):
    """Play as guest (templates/games/snippets/play_as_guest.html): the name,
    then checked as sign-up checks it (accounts.guests.clean_name)."""

    name = forms.CharField(max_length=150)
