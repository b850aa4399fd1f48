"""Input parsing only: the legality of a move is games.rules' business."""

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from .services import SIDES


class StrictIntegerField(forms.IntegerField):
    """Plain ASCII digits only: no signs, decimals, exponents or other scripts."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 3):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return int(text)


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

    def clean_side(self) -> str:
        return self.cleaned_data["side"] or SIDES[0]

    def clean_opponent(self):
        username = self.cleaned_data["opponent"].strip()
        if not username:
            return None
        try:
            return get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(
                "There is no player called “%(username)s”.",
                params={"username": username},
            ) from None


class SignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        fields = ["username"]
