"""The account routes (accounts.urls): allauth's own, included, each behind the
site's pages; the routes of allauth's that the site does not serve answer 404."""

import pytest
from django.urls import reverse

from accounts.urls import urlpatterns

from ..support.routes import routes

# Made-up values for the routes' arguments, by how a route writes them.
ARGUMENTS = {"(?P<key>": "MQ:key", "(?P<uidb36>": "1", "<int:pk>": 1}
# What each of allauth's pages accepts; the others accept GET, HEAD and POST.
ALLOW = {
    "account_logout": "POST",
    "mfa_index": "GET, HEAD",
    "mfa_view_recovery_codes": "GET, HEAD",
    "mfa_download_recovery_codes": "GET, HEAD",
    "mfa_list_webauthn": "GET, HEAD",
}
# allauth's views as routed (our SignupView, a subclass, is ours): the site's
# wrappers keep the view's module (functools.wraps).
ALLAUTH_PAGES = [
    (written, pattern)
    for written, pattern in routes(urlpatterns)
    if pattern.lookup_str.startswith("allauth.")
]

# The 405 page says what the address takes, without the methods' names.
METHOD_MESSAGES = {
    "GET, HEAD": "This address is a page to open: it takes no form.",
    "POST": "This address only takes what a button or form of this site sends.",
}
METHOD_OTHER = "This address does not take that kind of request."


@pytest.mark.parametrize(
    ("written", "pattern"), ALLAUTH_PAGES, ids=[p.name for _, p in ALLAUTH_PAGES]
)
def test_every_allauth_page_answers_other_methods_with_the_sites_405(
    as_alice, written, pattern
):
    arguments = {
        form.strip("(?P<>").removeprefix("int:"): value
        for form, value in ARGUMENTS.items()
        if form in written
    }
    response = as_alice.put(reverse(pattern.name, kwargs=arguments))
    allow = ALLOW.get(pattern.name, "GET, HEAD, POST")
    assert response.status_code == 405
    assert response["Allow"] == allow
    assert METHOD_MESSAGES.get(allow, METHOD_OTHER) in response.text


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/reauthenticate/code/",
        "/accounts/reauthenticate/code/confirm/",
        "/accounts/login/code/",
        "/accounts/login/code/confirm/",
        "/accounts/2fa/reauthenticate/",
        "/accounts/2fa/webauthn/reauthenticate/",
        "/accounts/2fa/webauthn/signup/",
        "/accounts/2fa/trust/",
        "/accounts/signup/passkey/",
        "/accounts/sessions/",
        "/accounts/3rdparty/",
        "/accounts/social/signup/",
    ],
)
def test_allauth_routes_the_site_does_not_serve_are_not_found(as_alice, path):
    assert as_alice.get(path).status_code == 404
    assert as_alice.post(path).status_code == 404
