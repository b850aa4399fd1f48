"""Choosing a language and telling the site one's time zone (accounts.preferences).

`set_language` is Django's (the language cookie, the redirect to `next`), held to
the languages the site ships, and for a logged-in player also saved on the
account and in their session. `set_time_zone` takes the zone the browser names
(static/games/timezone.js): saved on the account of a player, a cookie for a
visitor. Anything else is refused with a 400 that says why, and changes
nothing.
"""

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy
from django.views import i18n

from games.http import allow_methods

from . import preferences

post_only = allow_methods(
    "POST", hint=gettext_lazy("Use the language menu at the top of the page.")
)


def _refused(request, title: str, message: str):
    return render(
        request, "error.html", {"title": title, "message": message}, status=400
    )


@post_only
def set_language(request):
    code = request.POST.get(i18n.LANGUAGE_QUERY_PARAMETER, "")
    if code and preferences.language_named(code) is None:
        return _refused(
            request,
            gettext("Language not changed"),
            gettext("That is not one of the languages this site is offered in."),
        )
    response = i18n.set_language(request)
    if not code:
        # "The browser's language": no choice saved, no cookie.
        response.delete_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
    if request.user.is_authenticated:
        saved = preferences.save_language(user=request.user, language=code)
        preferences.refresh_session(request, saved)
    return response


@post_only
def set_time_zone(request):
    name = preferences.zone_named(request.POST.get("time_zone", ""))
    if name is None:
        return _refused(
            request,
            gettext("Time zone not changed"),
            gettext(
                "That is not the name of a time zone, such as Europe/Paris or "
                "America/Sao_Paulo."
            ),
        )
    # Asked by the page's script, which shows nothing of the answer.
    response = HttpResponse(status=204)
    if request.user.is_authenticated:
        saved = preferences.save_time_zone(user=request.user, time_zone=name)
        preferences.refresh_session(request, saved)
    else:
        response.set_cookie(
            preferences.TIME_ZONE_COOKIE,
            name,
            max_age=preferences.TIME_ZONE_COOKIE_AGE,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
    return response
