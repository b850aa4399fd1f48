"""Forwarded headers are believed only when the operator says a proxy is there
(DJANGO_TRUSTED_PROXY_COUNT): a client that reaches the server directly and
sends X-Forwarded-For / X-Forwarded-Proto itself changes neither its address nor
its scheme, for the server and for Django alike."""

import pytest

from ..support.served import manage, serving

pytestmark = pytest.mark.processes

REPLACED = (
    "is no longer read: set DJANGO_TRUSTED_PROXY_COUNT to the number of reverse "
    "proxies in front of the app (docs/settings.md)."
)


def test_a_direct_client_cannot_claim_https(tmp_path):
    """Production settings (HTTPS required) with no proxy declared: a client's
    own X-Forwarded-Proto: https is not believed, it is sent to HTTPS."""
    with serving(
        tmp_path, "direct_https", workers=1, DJANGO_TRUSTED_PROXY_COUNT="0"
    ) as app:
        response = app.browser(https=True).get("/accounts/login/")
    assert response.status == 301
    assert response.headers["Location"] == (
        f"https://127.0.0.1:{app.port}/accounts/login/"
    )


def test_a_direct_client_cannot_rotate_its_address_past_the_login_limit(tmp_path):
    """Plain HTTP, no proxy declared, 3 failed logins per client address: a
    client that names a new X-Forwarded-For each time is still one address."""
    with serving(
        tmp_path,
        "direct_http",
        workers=1,
        DJANGO_TRUSTED_PROXY_COUNT="0",
        DJANGO_SECURE_SSL_REDIRECT="0",
        DJANGO_SECURE_COOKIES="0",
        DJANGO_LOGIN_FAILURE_LIMIT="3",
    ) as app:
        statuses = []
        for n in range(5):
            login = app.browser(https=False)
            login.forwarded_for = f"203.0.113.{n + 1}"  # a new "address" each time
            assert login.get("/accounts/login/").status == 200  # the CSRF cookie
            fields = {"login": f"nobody{n}", "password": "wrong"}
            statuses.append(login.post("/accounts/login/", fields).status)
    assert statuses == [400, 400, 400, 429, 429]


@pytest.mark.parametrize(
    "variable", ["DJANGO_TRUST_X_FORWARDED_PROTO", "FORWARDED_ALLOW_IPS"]
)
def test_the_variables_it_replaced_stop_the_start(variable):
    result = manage("check", env={"DJANGO_DEBUG": "1", variable: "1"})
    assert result.returncode == 1
    assert f"{variable} {REPLACED}" in result.stderr
