"""What the account page offers about you beyond allauth's pages: signing out
your other browsers (allauth.usersessions keeps them: accounts.user_sessions),
and the download of everything the site keeps about you (accounts.data_export),
after the password again."""

import json

from allauth.account.decorators import reauthentication_required
from allauth.usersessions.adapter import get_adapter
from allauth.usersessions.models import UserSession
from django import forms
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from tictactoe_site.lib.error_pages import error_page, get_only, post_only

from .. import data_export, user_sessions


class EndSessionsForm(forms.Form):
    """`session`: one browser of the list (its id); or `others`: all but this."""

    session = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    others = forms.BooleanField(required=False)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if (data.get("session") is None) == (not data.get("others")):
            raise forms.ValidationError(
                _("Choose one browser to sign out, or all the others.")
            )
        return data


@post_only
@login_required
def end_sessions(request):
    """Sign out one of your browsers, or every one but this; their live
    streams end with them (accounts.user_sessions.UserSessionsAdapter)."""
    form = EndSessionsForm(request.POST)
    if not form.is_valid():
        return error_page(
            request,
            title=_("Nothing to sign out"),
            message=" ".join(form.non_field_errors() or [_("That is not a browser.")]),
            status=400,
        )
    current = request.session.session_key
    sessions = UserSession.objects.filter(user=request.user)
    if form.cleaned_data["others"]:
        chosen = list(sessions.exclude(session_key=current))
    else:
        chosen = list(sessions.filter(pk=form.cleaned_data["session"]))
        if not chosen:
            return error_page(
                request,
                title=_("No such browser"),
                message=_("That browser is not signed in to your account."),
                status=404,
            )
    ends_this_one = any(session.session_key == current for session in chosen)
    # Rows of sessions already ended (by a password change, say) go too, but
    # only browsers still signed in count.
    alive = {browser.id for browser in user_sessions.signed_in(request.user, current)}
    ended = sum(session.pk in alive for session in chosen)
    get_adapter().end_sessions(chosen)
    if ends_this_one:
        logout(request)
        messages.success(request, _("This browser is signed out."))
        return redirect("account_login")
    messages.success(
        request,
        ngettext(
            "Signed out of %(count)d other browser.",
            "Signed out of %(count)d other browsers.",
            ended,
        )
        % {"count": ended},
    )
    return redirect("account_change_password")


@get_only
@login_required
@reauthentication_required
def download_data(request):
    """Everything the site keeps about you, as one JSON file."""
    data = data_export.everything_about(request.user)
    response = HttpResponse(
        json.dumps(data, indent=2, ensure_ascii=False),
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="tictactoe-data-{timezone.now():%Y-%m-%d}.json"'
    )
    return response
