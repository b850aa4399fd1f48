"""The language menu of base.html: {% site_languages as languages %}, the
languages it offers; {% language_menu_next %}, where it returns to."""

from django import template
from django.conf import settings
from django.urls import reverse
from django.utils.encoding import escape_uri_path
from django.utils.http import url_has_allowed_host_and_scheme

register = template.Library()

# Query parameters that name where a page sends the person next (allauth's and
# Django's): kept only when they stay on this site.
REDIRECT_PARAMETERS = ("next",)


@register.simple_tag
def site_languages() -> list[tuple[str, str]]:
    """settings.LANGUAGES as written there: each language named in itself, in
    every language (Django's {% get_available_languages %} translates the names
    into the page's language: "Anglais" on a French page)."""
    return list(settings.LANGUAGES)


@register.simple_tag(takes_context=True)
def language_menu_next(context) -> str:
    """This page again, query included (a replay's move, the archive's filters, a
    login page's `next`), so that changing the language changes nothing else. A
    `next` that leads off the site is left out: the page would otherwise carry
    the foreign address in its menu (the login page itself ignores it).

    A page that answers a POST (a refusal, a form with errors) cannot be asked
    for again: its menu returns to the lobby. Its answer then holds nothing of
    the address it was posted to, so a refusal for a game that is hidden and
    one for a game that does not exist stay the same page."""
    request = context["request"]
    if request.method not in ("GET", "HEAD"):
        return reverse("lobby")
    query = request.GET.copy()
    for name in REDIRECT_PARAMETERS:
        if name in query:
            query.setlist(
                name,
                [
                    url
                    for url in query.getlist(name)
                    if url_has_allowed_host_and_scheme(url, allowed_hosts=None)
                ],
            )
    path = escape_uri_path(request.path)
    encoded = query.urlencode(safe="/")
    return f"{path}?{encoded}" if encoded else path
