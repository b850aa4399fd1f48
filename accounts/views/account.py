"""The account pages: allauth's views behind the site's status codes and
readable 405 page, and closing an account (allauth has no such page)."""

from functools import wraps

from allauth.account import views as allauth_views
from allauth.account.models import EmailAddress
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.csrf import csrf_exempt

from tictactoe_site.lib.error_pages import allow_methods, error_page, post_only

from .. import services
from ..forms import CloseAccountForm, TurnEmailForm, UsernameJustTaken

account_methods = allow_methods(
    "GET", "POST", hint=gettext_lazy("Use the form on the page.")
)


def refused_status(form) -> int:
    """429 when the form was refused because logins are paused, else 400."""
    codes = {
        error.code for errors in form.errors.as_data().values() for error in errors
    }
    return 429 if "too_many_login_attempts" in codes else 400


def refusal_status(view):
    """A refused form is re-rendered with status 400, or 429 when logins are
    paused; a password-reset or confirmation link that is expired, used or
    broken is a 400 page."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if not isinstance(response, TemplateResponse) or response.status_code != 200:
            return response
        context = response.context_data or {}
        form = context.get("form")
        if context.get("token_fail") or (
            "confirmation" in context and context["confirmation"] is None
        ):
            response.status_code = 400
        elif request.method == "POST" and form is not None and form.errors:
            response.status_code = refused_status(form)
        return response

    return wrapper


def account_page(view):
    return account_methods(refusal_status(view))


class SignupView(allauth_views.SignupView):
    def form_valid(self, form):
        """allauth's, except that a username another sign-up took in between
        (the database refuses it in any case: accounts migration 0001) is the
        form's error, not a 500."""
        try:
            return super().form_valid(form)
        except UsernameJustTaken:
            return self.form_invalid(form)


@account_methods
@login_required
def close_account(request):
    """GET: what closing means, and the form; POST with the password: close."""
    form = CloseAccountForm(request.POST or None, user=request.user)
    if request.method == "POST":
        if form.is_valid():
            username = request.user.get_username()
            services.close_account(user=request.user)
            logout(request)
            messages.success(
                request,
                _("The account “%(username)s” is closed. Thank you for playing.")
                % {"username": username},
            )
            # The home page (which sends a visitor on to the login page): a
            # redirect straight to the login page reads as "log in first".
            return redirect("lobby")
        status = refused_status(form)
    else:
        status = 200
    return render(request, "account/close.html", {"form": form}, status=status)


@post_only
@login_required
def turn_email_settings(request):
    """The account page's your-turn email choice: only with a confirmed address."""
    if not EmailAddress.objects.filter(user=request.user, verified=True).exists():
        return error_page(
            request,
            title=_("No confirmed email address"),
            message=_(
                "Confirm an email address first: the emails go only "
                "to a confirmed address."
            ),
            status=400,
        )
    form = TurnEmailForm(request.POST)
    form.is_valid()  # an unchecked or absent box is "off"
    enabled = form.cleaned_data.get("enabled", False)
    services.set_turn_emails(user=request.user, enabled=enabled)
    messages.success(
        request,
        _("You will get an email when a game has waited on your move.")
        if enabled
        else _("You will not get emails about games waiting on your move."),
    )
    return redirect("account_change_password")


# One click from a mail program (RFC 8058) POSTs here without a CSRF token or a
# session: the signed token is the authority, and it only unsubscribes.
@csrf_exempt
@account_methods
def turn_email_unsubscribe(request, token):
    """GET: confirm with a button (mail scanners follow links); POST: stop."""
    try:
        user_id = services.unsubscriber(token)
    except signing.BadSignature:
        return error_page(
            request,
            title=_("Broken unsubscribe link"),
            message=_(
                "This unsubscribe link is broken. Use the link in the "
                "email as it is, or turn the emails off on your account page."
            ),
            status=400,
        )
    if request.method == "POST":
        services.unsubscribe(user_id=user_id)
        return render(request, "account/turn_email_unsubscribed.html")
    return render(request, "account/turn_email_unsubscribe.html")
