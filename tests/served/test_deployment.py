"""Security headers on real responses, and `check --deploy` with the production
variables that docs/deploying.md documents."""

from pathlib import Path

import pytest
from django.test import override_settings

from ..conftest import PASSWORD
from ..support.served import PRODUCTION_ENV, manage

ROOT = Path(__file__).resolve().parents[2]

HTTPS_PROXY_SETTINGS = {
    "SECURE_SSL_REDIRECT": True,
    "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    "SESSION_COOKIE_SECURE": True,
    "CSRF_COOKIE_SECURE": True,
    "SECURE_HSTS_SECONDS": 31536000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SECURE_HSTS_PRELOAD": True,
}


@pytest.mark.django_db
def test_every_page_sends_the_security_headers(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in response["Content-Security-Policy"].split(";")
    )
    assert policy["default-src"] == "'self'"
    # The nonce appears only on pages with a script; never anything looser.
    assert policy["script-src"].split()[0] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["form-action"] == "'self'"
    assert "unsafe-inline" not in response["Content-Security-Policy"]


@pytest.mark.django_db
def test_session_and_csrf_cookies_are_httponly_and_samesite(client, alice):
    csrf = client.get("/accounts/login/").cookies["csrftoken"]
    assert csrf["samesite"] == "Lax"
    response = client.post("/accounts/login/", {"login": "alice", "password": PASSWORD})
    assert response.status_code == 302
    session = response.cookies["sessionid"]
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"


@pytest.mark.django_db
@override_settings(**HTTPS_PROXY_SETTINGS)
def test_plain_http_is_redirected_to_https(client):
    response = client.get("/accounts/login/?next=/")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/accounts/login/?next=/"


@pytest.mark.django_db
@override_settings(**HTTPS_PROXY_SETTINGS)
def test_behind_a_tls_proxy_https_gets_hsts_and_secure_cookies(client, alice):
    https = {"headers": {"X-Forwarded-Proto": "https"}}
    response = client.get("/accounts/login/", **https)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == (
        "max-age=31536000; includeSubDomains; preload"
    )
    assert response.cookies["csrftoken"]["secure"] is True
    login = client.post(
        "/accounts/login/", {"login": "alice", "password": PASSWORD}, **https
    )
    assert login.status_code == 302
    assert login.cookies["sessionid"]["secure"] is True


@pytest.mark.usefixtures("worker_beating")
@override_settings(**HTTPS_PROXY_SETTINGS)
@pytest.mark.parametrize("path", ["/livez", "/readyz", "/healthz", "/workerz"])
def test_the_health_probes_answer_plain_http(client, path):
    """Load balancers and monitors probe over plain HTTP, without HSTS."""
    response = client.get(path)
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert "Strict-Transport-Security" not in response


@pytest.mark.processes
@pytest.mark.no_database
def test_check_deploy_is_clean_with_the_documented_production_variables():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.processes
@pytest.mark.no_database
def test_check_deploy_warns_without_them():
    env = {
        name: PRODUCTION_ENV[name] for name in ("DJANGO_SECRET_KEY", "DJANGO_SITE_URL")
    }
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 1
    for check in ("W004", "W008", "W012", "W016"):
        assert f"(security.{check})" in result.stderr


@pytest.mark.processes
@pytest.mark.no_database
def test_production_refuses_to_start_without_a_secret_key():
    env = {key: value for key, value in PRODUCTION_ENV.items() if "SECRET" not in key}
    result = manage("check", "--deploy", env=env)
    assert result.returncode == 1
    assert "DJANGO_SECRET_KEY is not set." in result.stderr


# -- the site's address ----------------------------------------------


def refusal(env: dict[str, str]) -> tuple[int, str]:
    result = manage("check", env=env)
    return result.returncode, result.stderr


@pytest.mark.processes
@pytest.mark.no_database
def test_production_refuses_to_start_without_the_site_url():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_SITE_URL"}
    assert refusal(env) == (
        1,
        "DJANGO_SITE_URL is not set: set it to the site's address as players "
        "reach it, e.g. https://ttt.example.com (links in emails start with it).\n",
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000",
        "http://127.0.0.2",
        "http://localhost:8000/",
        "http://[::1]:8000",
    ],
)
@pytest.mark.processes
@pytest.mark.no_database
def test_production_refuses_a_site_url_on_this_machine_for_a_public_host(url):
    env = PRODUCTION_ENV | {
        "DJANGO_SITE_URL": url,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,ttt.example.com",
    }
    assert refusal(env) == (
        1,
        f"DJANGO_SITE_URL names this machine ({url.rstrip('/')}) while "
        "DJANGO_ALLOWED_HOSTS names ttt.example.com: set it to the site's address "
        "as players reach it (links in emails start with it).\n",
    )


@pytest.mark.processes
@pytest.mark.no_database
def test_a_site_url_on_this_machine_is_right_when_every_host_is_too():
    """A production server only this machine reaches (the benchmarks)."""
    env = PRODUCTION_ENV | {
        "DJANGO_SITE_URL": "http://127.0.0.1:8000",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost,[::1]",
    }
    result = manage("check", env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "url", ["ttt.example.com", "ftp://ttt.example.com", "https://"]
)
@pytest.mark.processes
@pytest.mark.no_database
def test_a_site_url_that_is_no_web_address_is_refused(url):
    env = PRODUCTION_ENV | {"DJANGO_SITE_URL": url}
    assert refusal(env) == (
        1,
        "DJANGO_SITE_URL must be an http:// or https:// address such as "
        f"https://ttt.example.com, not {url!r}.\n",
    )


@pytest.mark.processes
@pytest.mark.no_database
def test_development_needs_no_site_url():
    env = {"DJANGO_DEBUG": "1", "DJANGO_ALLOWED_HOSTS": "ttt.example.com"}
    result = manage("shell", "-c", SHOW_SITE_URL, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "http://127.0.0.1:8000"


SHOW_SITE_URL = "from django.conf import settings; print(settings.SITE_URL)"


# -- email ----------------------------------------------------------

SMTP_ENV = {
    "DJANGO_EMAIL_HOST": "smtp.example.com",
    "DJANGO_EMAIL_PORT": "587",
    "DJANGO_EMAIL_HOST_USER": "mailer",
    "DJANGO_EMAIL_HOST_PASSWORD": "mail-secret",
    "DJANGO_EMAIL_USE_TLS": "1",
    "DJANGO_DEFAULT_FROM_EMAIL": "tictactoe <noreply@ttt.example.com>",
    "DJANGO_PASSWORD_RESET_TIMEOUT": "1800",
}
SHOW_MAILER = (
    "from django.conf import settings; from django.core import mail; "
    "m = mail.mailers['relay']; "
    "print(type(mail.mailers.default).__qualname__, type(m).__module__, "
    "settings.DEFAULT_FROM_EMAIL, "
    "settings.PASSWORD_RESET_TIMEOUT, *[getattr(m, name, '-') for name in "
    "('host', 'port', 'username', 'use_tls', 'timeout')], sep='|')"
)


def mailer(env: dict[str, str]) -> list[str]:
    result = manage("shell", "-v", "0", "-c", SHOW_MAILER, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1].split("|")


@pytest.mark.processes
@pytest.mark.no_database
def test_check_deploy_stays_clean_with_the_smtp_variables():
    env = PRODUCTION_ENV | SMTP_ENV
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.processes
@pytest.mark.no_database
def test_production_queues_email_for_the_worker_to_send_over_smtp():
    assert mailer(PRODUCTION_ENV | SMTP_ENV) == [
        "QueuedEmailBackend",
        "django.core.mail.backends.smtp",
        "tictactoe <noreply@ttt.example.com>",
        "1800",
        "smtp.example.com",
        "587",
        "mailer",
        "True",
        "10",
    ]


@pytest.mark.processes
@pytest.mark.no_database
def test_development_queues_email_for_the_worker_to_print():
    assert mailer({"DJANGO_DEBUG": "1"}) == [
        "QueuedEmailBackend",
        "django.core.mail.backends.console",
        "tictactoe <noreply@localhost>",
        "3600",
        *["-"] * 5,
    ]
