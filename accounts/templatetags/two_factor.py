from allauth.mfa.models import Authenticator
from django import template

register = template.Library()


@register.inclusion_tag("mfa/snippets/account_section.html")
def two_factor_section(user) -> dict:
    """The account page's second factors, as allauth's /accounts/2fa/ page lists
    them: one query."""
    authenticators = {"webauthn": []}
    for authenticator in Authenticator.objects.filter(user_id=user.pk):
        if authenticator.type == Authenticator.Type.WEBAUTHN:
            authenticators["webauthn"].append(authenticator.wrap())
        else:
            authenticators[authenticator.type] = authenticator.wrap()
    return {"authenticators": authenticators}
