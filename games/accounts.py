"""Account pages: sign up, change or reset the password, the email address, and
closing the account. Password change and reset are Django's views with the
project's templates and checks; a refused form is re-rendered with status 400.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.timesince import timeuntil

from . import services, throttle
from .forms import (
    EMAIL_TAKEN,
    CheckedPasswordChangeForm,
    CloseAccountForm,
    EmailForm,
    SignupForm,
)
from .http import allow_methods, get_only

account_methods = allow_methods("GET", "POST", hint="Use the form on the page.")


def _saved(form) -> bool:
    """Save `form`; False (with the form error) when a concurrent request took
    the username or email address between validation and the write."""
    try:
        with transaction.atomic():
            form.save()
    except IntegrityError:
        username = form.cleaned_data.get("username")
        if username and get_user_model().objects.filter(username__iexact=username):
            form.add_error("username", "That username was just taken: choose another.")
        else:
            form.add_error("email", EMAIL_TAKEN)
        return False
    return True


@account_methods
def signup(request):
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = ""
    # next_url is a URL, never a view name: redirect() would try to reverse() it.
    success_url = next_url or reverse("lobby")
    if request.user.is_authenticated:
        return HttpResponseRedirect(success_url)
    form = SignupForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid() and _saved(form):
            user = form.instance
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {user.get_username()}!")
            return HttpResponseRedirect(success_url)
        status = 400
    else:
        status = 200
    return render(
        request,
        "registration/signup.html",
        {"form": form, "next": next_url},
        status=status,
    )


def reset_link_lifetime() -> str:
    """PASSWORD_RESET_TIMEOUT in words: "1 hour", "2 days, 3 hours"."""
    now = timezone.now()
    return timeuntil(now + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT), now)


class RefusedFormIs400:
    """A form that does not validate is re-rendered with status 400."""

    def form_invalid(self, form):
        return self.render_to_response(self.get_context_data(form=form), status=400)


class PasswordChangeView(RefusedFormIs400, auth_views.PasswordChangeView):
    """Django's view: the current session stays logged in (its session hash is
    updated), every other session of the user ends."""

    form_class = CheckedPasswordChangeForm

    def get_form_kwargs(self):
        return super().get_form_kwargs() | {"request": self.request}


class PasswordResetView(RefusedFormIs400, auth_views.PasswordResetView):
    """Django's view: the same answer whether or not an account has the address
    (it sends nothing for unknown, closed or password-less accounts); requests
    are throttled per address and per client (games.throttle)."""

    email_template_name = "registration/password_reset_email.txt"

    def form_valid(self, form):
        if not throttle.reset_allowed(self.request, form.cleaned_data["email"]):
            return throttle.reset_throttled(self.request)
        self.extra_email_context = {"timeout": reset_link_lifetime()}
        return super().form_valid(form)


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {"timeout": reset_link_lifetime()}


class PasswordResetConfirmView(RefusedFormIs400, auth_views.PasswordResetConfirmView):
    """Django's view; an expired, used or mangled link is a 400 page that says so."""

    def render_to_response(self, context, **kwargs):
        if not context.get("validlink"):
            kwargs["status"] = 400
        return super().render_to_response(context, **kwargs)


def _account_form(request, form_class, **kwargs):
    return form_class(
        request.POST if request.method == "POST" else None,
        user=request.user,
        request=request,
        **kwargs,
    )


@account_methods
@login_required
def email(request):
    form = _account_form(request, EmailForm)
    if request.method == "POST":
        if form.is_valid() and _saved(form):
            address = form.cleaned_data["email"]
            messages.success(
                request,
                f"Your email address is now {address}."
                if address
                else "Your email address is removed.",
            )
            return redirect("account_email")
        status = 400
    else:
        status = 200
    return render(
        request, "registration/email_form.html", {"form": form}, status=status
    )


@account_methods
@login_required
def close_account(request):
    """GET: what closing means, and the form; POST with the password: close."""
    form = _account_form(request, CloseAccountForm)
    if request.method == "POST":
        if form.is_valid():
            username = request.user.get_username()
            services.close_account(user=request.user)
            logout(request)
            messages.success(
                request, f"The account “{username}” is closed. Thank you for playing."
            )
            # The home page (which sends a visitor on to the login page): a
            # redirect straight to the login page reads as "log in first".
            return redirect("lobby")
        status = 400
    else:
        status = 200
    return render(
        request, "registration/close_account.html", {"form": form}, status=status
    )


# Django's views, each behind the site's readable 405 page.
password_change = account_methods(PasswordChangeView.as_view())
password_change_done = get_only(auth_views.PasswordChangeDoneView.as_view())
password_reset = account_methods(PasswordResetView.as_view())
password_reset_done = get_only(PasswordResetDoneView.as_view())
password_reset_confirm = account_methods(PasswordResetConfirmView.as_view())
password_reset_complete = get_only(auth_views.PasswordResetCompleteView.as_view())
