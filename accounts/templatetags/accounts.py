from allauth.account.models import EmailAddress
from allauth.account.utils import get_next_redirect_url
from django import template
from django.utils.html import format_html

from accounts.forms import TurnEmailForm

register = template.Library()


@register.simple_tag(takes_context=True)
def next_field(context) -> str:
    """The hidden `next` field of a login, sign-up or re-authentication form,
    only for a URL of this site: allauth's pages would echo any value."""
    name = context.get("redirect_field_name") or "next"
    url = get_next_redirect_url(context["request"], name)
    if not url:
        return ""
    return format_html('<input type="hidden" name="{}" value="{}">', name, url)


@register.inclusion_tag("account/snippets/turn_email.html", takes_context=True)
def turn_email_form(context, user) -> dict:
    """The your-turn email choice, for a user with a confirmed address: one
    query (a confirmed address, joined to the user's choice)."""
    confirmed = list(
        EmailAddress.objects.filter(user=user, verified=True).values_list(
            "user__turn_email__enabled", flat=True
        )[:1]
    )
    return {
        "confirmed": bool(confirmed),
        "form": TurnEmailForm(initial={"enabled": bool(confirmed and confirmed[0])}),
        "csrf_token": context.get("csrf_token"),
    }
