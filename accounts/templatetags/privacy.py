from django import template

from accounts.user_sessions import signed_in

register = template.Library()


@register.inclusion_tag("account/snippets/browsers.html", takes_context=True)
def signed_in_browsers(context, user) -> dict:
    """The account page's list of `user`'s signed-in browsers, with sign-out
    buttons (accounts.user_sessions: two queries)."""
    request = context["request"]
    return {
        "browsers": signed_in(user, request.session.session_key),
        "csrf_token": context.get("csrf_token"),
    }
