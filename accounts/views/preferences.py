"""Choosing a language and telling the site one's time zone (accounts.middleware
applies them).

`set_language` is Django's (the language cookie, the redirect to `next`), held to
the languages the site ships, and for a logged-in player also saved on the
account and in their session. `set_time_zone` takes the zone the browser names
(static/games/timezone.js): saved on the account of a player, a cookie for a
visitor. `preferences_page` is the account page "Language and time", where a
player sees and changes both. Anything else is refused with a 400 that says
why, and changes nothing.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy
from django.views import i18n

from tictactoe_site.lib import error_pages
from tictactoe_site.lib.error_pages import allow_methods, error_page

from .. import middleware, services, zone_menu
from ..forms import PreferencesForm, PrivateGamesForm
from ..middleware import language_named, zone_named
from ..models import Preferences, new_games_private
from .account import account_methods

post_only = allow_methods(
    "POST", hint=gettext_lazy("Use the language menu at the top of the page.")
)


def set_language_cookie(response, code: str) -> None:
    """The language cookie as Django's set_language writes it; none for ""
    ("the browser's language": no choice saved, no cookie)."""
    if code:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            code,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
    else:
        response.delete_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )


def browser_language(request) -> str:
    """The language the browser asks for (Accept-Language), as the next page
    picks it once the language cookie is gone."""
    cookies = request.COOKIES
    request.COOKIES = {
        name: value
        for name, value in cookies.items()
        if name != settings.LANGUAGE_COOKIE_NAME
    }
    try:
        return translation.get_language_from_request(request)
    finally:
        request.COOKIES = cookies


@post_only
def set_language(request):
    code = request.POST.get(i18n.LANGUAGE_QUERY_PARAMETER, "")
    if code and language_named(code) is None:
        return error_page(
            request,
            title=gettext("Language not changed"),
            message=gettext(
                "That is not one of the languages this site is offered in."
            ),
            status=400,
        )
    response = i18n.set_language(request)
    if not code:
        set_language_cookie(response, "")
    if request.user.is_authenticated:
        saved = services.save_language(user=request.user, language=code)
        middleware.refresh_session(request, saved)
    return response


@post_only
def set_time_zone(request):
    name = zone_named(request.POST.get("time_zone", ""))
    if name is None:
        return error_page(
            request,
            title=gettext("Time zone not changed"),
            message=gettext(
                "That is not the name of a time zone, such as Europe/Paris or "
                "America/Sao_Paulo."
            ),
            status=400,
        )
    # Asked by the page's script, which shows nothing of the answer.
    response = HttpResponse(status=204)
    if request.user.is_authenticated:
        saved = services.save_time_zone(user=request.user, time_zone=name)
        middleware.refresh_session(request, saved)
    else:
        response.set_cookie(
            middleware.TIME_ZONE_COOKIE,
            name,
            max_age=middleware.TIME_ZONE_COOKIE_AGE,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
    return response


@account_methods
@login_required
def preferences_page(request):
    """GET: the language and time zone saved on the account; POST: save both,
    applied at once on this browser (its session and language cookie) and on
    any other at its next login."""
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            language = form.cleaned_data["language"]
            saved = services.save_preferences(
                user=request.user,
                language=language,
                time_zone=form.cleaned_data["time_zone"],
            )
            middleware.refresh_session(request, saved)
            # "Saved." in the language of the next page.
            translation.activate(language or browser_language(request))
            messages.success(request, gettext("Saved."))
            response = redirect("account_preferences")
            set_language_cookie(response, language)
            return response
        status = 400
        private = new_games_private(request.user)
    else:
        saved = Preferences.objects.filter(user=request.user).first()
        form = PreferencesForm(
            initial={
                "language": saved.language if saved else "",
                # The menu lists a zone under its current id (Asia/Kolkata).
                "time_zone": zone_menu.canonical(saved.time_zone) if saved else "",
            }
        )
        status = 200
        private = saved.new_games_private if saved else False
    private_form = PrivateGamesForm(initial={"private": private})
    context = {"form": form, "private_form": private_form}
    return render(request, "account/preferences.html", context, status=status)


@error_pages.post_only
@login_required
def private_games_setting(request):
    """The preferences page's choice: every new game private, or public."""
    form = PrivateGamesForm(request.POST)
    form.is_valid()  # an unchecked or absent box is "off"
    private = form.cleaned_data.get("private", False)
    services.set_new_games_private(user=request.user, private=private)
    messages.success(
        request,
        gettext("Every game you start from now on is private.")
        if private
        else gettext("Every game you start from now on is public by its link."),
    )
    return redirect("account_preferences")
