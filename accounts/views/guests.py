"""The guest's pages: Keep this account (accounts.services.keep_account) and the
warning before a guest logs out."""

from functools import wraps

from allauth.account import forms as allauth_forms
from allauth.account.adapter import get_adapter
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from tictactoe_site.lib.error_pages import error_page

from .. import usernames
from ..forms import EMAIL_HELP, EMAIL_LABEL, JUST_TAKEN
from ..guests import is_guest
from ..services import NotAGuest, keep_account
from .account import account_methods, refused_status

NOT_A_GUEST = gettext_lazy(
    "This account is not a guest account: it has a password, and its name can "
    "no longer be changed."
)


class KeepAccountForm(allauth_forms.SetPasswordForm):
    """allauth's form to set a password (its validators), with the name (the
    guest's own, or a free one) and an optional email address, added as on the
    email page (allauth's AddEmailForm: confirmed through its mailed link)."""

    username = forms.CharField(
        label=gettext_lazy("Username"),
        max_length=150,
        help_text=gettext_lazy(
            "Keep your guest name, or choose another now: it cannot be changed later."
        ),
        widget=forms.TextInput(attrs={"autocomplete": "username"}),
    )
    email = forms.EmailField(
        label=EMAIL_LABEL,
        required=False,
        help_text=EMAIL_HELP,
    )
    field_order = ["username", "email", "password1", "password2"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].initial = self.user.get_username()
        self.email_form = None

    def clean_username(self) -> str:
        name = self.cleaned_data["username"]
        if name == self.user.get_username():
            return name
        adapter = get_adapter()
        name = adapter.clean_username(name, shallow=True)
        try:
            usernames.check_available(name, user=self.user)
        except forms.ValidationError as error:
            if error.code == "username_taken":
                raise adapter.validation_error("username_taken") from None
            raise
        return name

    def clean_email(self) -> str:
        email = self.cleaned_data["email"]
        if not email:
            return ""
        self.email_form = allauth_forms.AddEmailForm(
            user=self.user, data={"email": email}
        )
        if not self.email_form.is_valid():
            raise forms.ValidationError(self.email_form.errors["email"])
        return self.email_form.cleaned_data["email"]


@account_methods
@login_required
def keep(request):
    """GET: the form; POST: the guest's account becomes a normal one."""
    if not is_guest(request.user):
        return error_page(
            request, title=_("Not a guest account"), message=NOT_A_GUEST, status=403
        )
    form = KeepAccountForm(data=request.POST or None, user=request.user)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                account = keep_account(
                    user=request.user,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                )
            except NotAGuest:  # kept or closed since the check above
                return error_page(
                    request,
                    title=_("Not a guest account"),
                    message=NOT_A_GUEST,
                    status=403,
                )
            except IntegrityError:
                form.add_error("username", JUST_TAKEN)
            else:
                # This session stays logged in (the password changed its hash)
                # under a new key, which its signed-in browser follows.
                update_session_auth_hash(request, account)
                if form.email_form is not None:
                    form.email_form.user = account
                    form.email_form.save(request)
                messages.success(
                    request,
                    _(
                        "The account “%(username)s” is yours: log in with its "
                        "name and your password from now on."
                    )
                    % {"username": account.get_username()},
                )
                return redirect("account_change_password")
        status = refused_status(form)
    context = {"form": form, "idle_days": settings.GAMES_GUEST_MAX_IDLE_DAYS}
    return render(request, "account/keep.html", context, status=status)


def logout_warning_for_guests(logout):
    """A guest's Log out asks first: nobody can log in as a guest, so the
    account is out of reach once its session ends, unless it is kept. The
    page's button sends `confirmed` and logs out."""

    @wraps(logout)
    def wrapper(request, *args, **kwargs):
        if (
            request.user.is_authenticated
            and "confirmed" not in request.POST
            and is_guest(request.user)
        ):
            return render(request, "account/logout.html")
        return logout(request, *args, **kwargs)

    return wrapper
