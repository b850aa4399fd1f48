from allauth.account.utils import get_next_redirect_url
from django import template
from django.utils.html import format_html

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
