"""tictactoe_site.ops.preflight: the server refuses debug mode on a public address;
the task worker warns when email would cross the network in clear text."""

import os
import subprocess
import sys

import pytest

from tictactoe_site.ops.preflight import clear_text_mail_warning, debug_refusal

from ..support.served import NO_DOT_ENV, ROOT, free_port

REFUSAL = (
    "Debug mode is on (DJANGO_DEBUG, perhaps from a .env left by `make run`) and the "
    "server would listen on 0.0.0.0, where anyone who reaches it sees tracebacks and "
    "settings. Set DJANGO_DEBUG=0 for production, listen on 127.0.0.1, or set "
    "DJANGO_DEBUG_ON_PUBLIC_ADDRESS=1 if you really mean it."
)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"]
)
def test_debug_on_a_loopback_address_is_fine(settings, host):
    settings.DEBUG = True
    assert debug_refusal(host, allowed=False) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "ttt.example.com"])
def test_debug_on_any_other_address_is_refused(settings, host):
    settings.DEBUG = True
    assert debug_refusal(host, allowed=False) == REFUSAL.replace("0.0.0.0", host)


def test_debug_on_a_public_address_when_told_twice(settings):
    settings.DEBUG = True
    assert debug_refusal("0.0.0.0", allowed=True) is None


def test_no_debug_no_refusal(settings):
    settings.DEBUG = False
    assert debug_refusal("0.0.0.0", allowed=False) is None


@pytest.mark.processes
@pytest.mark.no_database
def test_the_server_stops_before_listening_with_debug_on_a_public_address():
    env = {
        "PATH": os.environ["PATH"],
        **NO_DOT_ENV,
        "DJANGO_DEBUG": "1",
        "HOST": "0.0.0.0",
        "PORT": str(free_port()),
        "WEB_CONCURRENCY": "1",
        "TASK_WORKERS": "0",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tictactoe_site.server.serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == f"{REFUSAL}\n"  # one line, no traceback, no server


def smtp(**options) -> dict:
    return {
        "default": {"BACKEND": "tictactoe_site.jobs.mail.QueuedEmailBackend"},
        "relay": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": options,
        },
    }


def test_clear_text_email_to_another_host_is_warned_about(settings):
    settings.MAILERS = smtp(host="smtp.example.com", port=25, use_tls=False)
    assert clear_text_mail_warning() == (
        "Email goes to smtp.example.com without TLS: password-reset links cross the "
        "network in clear text. Set DJANGO_EMAIL_USE_TLS=1 (docs/settings.md)."
    )


@pytest.mark.parametrize(
    "options",
    [
        {"host": "smtp.example.com", "use_tls": True},
        {"host": "smtp.example.com", "use_ssl": True},
        {"host": "localhost", "use_tls": False},
        {"host": "127.0.0.1"},
    ],
)
def test_email_over_tls_or_to_this_host_is_fine(settings, options):
    settings.MAILERS = smtp(**options)
    assert clear_text_mail_warning() is None


def test_email_printed_to_the_console_is_fine(settings):
    settings.MAILERS = {
        "relay": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
    }
    assert clear_text_mail_warning() is None
