"""Secrets from files (`X_FILE`, as container platforms mount them) and a secret
key rotated without logging anyone out (DJANGO_SECRET_KEY_FALLBACKS);
docs/operations.md describes both."""

import pytest
from django.core import mail
from django.test import Client

from tictactoe_site.lib.env import ConfigurationError, env_secret, env_secret_list

from ..support.account_client import (
    LINK_INVALID,
    ask_for_reset,
    confirmed,
    logged_in_as,
    login,
    mailed_link,
)
from .test_env import load_settings, make_serve

VAR = "TTT_TEST_SECRET"


@pytest.fixture
def secret_file(tmp_path):
    def write(content: str | bytes, name: str = "secret") -> str:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return str(path)

    return write


def refusal(read) -> str:
    with pytest.raises(ConfigurationError) as raised:
        read()
    return str(raised.value)


# -- X_FILE -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "value"),
    [
        ("s3cret\n", "s3cret"),  # echo s3cret > file
        ("s3cret\r\n", "s3cret"),
        ("s3cret", "s3cret"),  # printf %s s3cret > file
        (" pass word \n", " pass word "),  # spaces are part of a secret
        ("two\nlines\n", "two\nlines"),  # only the final line break goes
    ],
)
def test_a_secret_is_read_from_the_file_its_variable_names(
    monkeypatch, secret_file, content, value
):
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.setenv(f"{VAR}_FILE", secret_file(content))
    assert env_secret(VAR) == value


@pytest.mark.parametrize("file_value", [None, "", "  "])
def test_without_a_file_the_variable_itself_counts(monkeypatch, file_value):
    monkeypatch.setenv(VAR, " as given ")
    if file_value is None:
        monkeypatch.delenv(f"{VAR}_FILE", raising=False)
    else:
        monkeypatch.setenv(f"{VAR}_FILE", file_value)
    assert env_secret(VAR) == " as given "


def test_both_the_variable_and_its_file_are_refused(monkeypatch, secret_file):
    monkeypatch.setenv(VAR, "inline")
    monkeypatch.setenv(f"{VAR}_FILE", secret_file("from the file\n"))
    assert refusal(lambda: env_secret(VAR)) == (
        f"{VAR} and {VAR}_FILE are both set: set one of them (the file holds the "
        f"value of {VAR})."
    )


def test_an_unreadable_file_is_refused_with_its_name(monkeypatch, tmp_path):
    monkeypatch.delenv(VAR, raising=False)
    missing = tmp_path / "missing"
    monkeypatch.setenv(f"{VAR}_FILE", str(missing))
    assert refusal(lambda: env_secret(VAR)) == (
        f"{VAR}_FILE names {missing}, which cannot be read: No such file or directory."
    )
    monkeypatch.setenv(f"{VAR}_FILE", str(tmp_path))
    assert refusal(lambda: env_secret(VAR)) == (
        f"{VAR}_FILE names {tmp_path}, which cannot be read: Is a directory."
    )


def test_a_file_that_is_not_text_is_refused(monkeypatch, secret_file):
    monkeypatch.delenv(VAR, raising=False)
    path = secret_file(b"\xff\xfe\x00key")
    monkeypatch.setenv(f"{VAR}_FILE", path)
    assert refusal(lambda: env_secret(VAR)) == (
        f"{VAR}_FILE names {path}, which cannot be read: not UTF-8 text."
    )


def test_a_list_of_secrets_takes_commas_or_lines(monkeypatch, secret_file):
    monkeypatch.setenv(VAR, "old-key-1, old-key-2,,")
    assert env_secret_list(VAR) == ["old-key-1", "old-key-2"]
    monkeypatch.delenv(VAR)
    monkeypatch.setenv(f"{VAR}_FILE", secret_file("old-key-1\nold-key-2\n\n"))
    assert env_secret_list(VAR) == ["old-key-1", "old-key-2"]


# Each secret the settings read, the setting it lands in, and a value for it.
SECRETS = {
    "DJANGO_SECRET_KEY": (lambda s: s["SECRET_KEY"], " key from a file "),
    "DJANGO_SECRET_KEY_FALLBACKS": (
        lambda s: s["SECRET_KEY_FALLBACKS"],
        "older-key\noldest-key",
    ),
    "DATABASE_URL": (
        lambda s: s["DATABASES"]["default"]["PASSWORD"],
        "postgres://app:pw-from-file@db.internal:5432/ttt",
    ),
    "REDIS_URL": (
        lambda s: s["REDIS_URL"],
        "rediss://:pw-from-file@redis.internal:6379/0",
    ),
    "DJANGO_EMAIL_HOST_PASSWORD": (
        lambda s: s["MAILERS"]["relay"]["OPTIONS"]["password"],
        "smtp pw ",
    ),
    "SENTRY_DSN": (
        lambda s: s["SENTRY_DSN"],
        "https://public@sentry.example.com/1",
    ),
}
EXPECTED = {
    "DJANGO_SECRET_KEY": " key from a file ",
    "DJANGO_SECRET_KEY_FALLBACKS": ["older-key", "oldest-key"],
    "DATABASE_URL": "pw-from-file",
    "REDIS_URL": "rediss://:pw-from-file@redis.internal:6379/0",
    "DJANGO_EMAIL_HOST_PASSWORD": "smtp pw ",
    "SENTRY_DSN": "https://public@sentry.example.com/1",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_the_settings_read_every_secret_from_a_file(monkeypatch, secret_file, name):
    read, content = SECRETS[name]
    path = secret_file(content + "\n")
    # Empty counts as unset (load_settings sets a key and a database by default).
    settings = load_settings(monkeypatch, **{name: "", f"{name}_FILE": path})
    assert read(settings) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_the_settings_refuse_a_secret_set_twice(monkeypatch, secret_file, name):
    _, content = SECRETS[name]
    path = secret_file(content)
    assert refusal(
        lambda: load_settings(monkeypatch, **{name: content, f"{name}_FILE": path})
    ).startswith(f"{name} and {name}_FILE are both set")


# -- rotating the secret key ----------------------------------------------------

OLD_KEY = "old-secret-key-for-the-rotation-test-0123456789"
NEW_KEY = "new-secret-key-for-the-rotation-test-9876543210"


@pytest.mark.parametrize(("fallbacks", "logged_in"), [([OLD_KEY], True), ([], False)])
def test_a_session_from_before_a_rotation_lasts_with_the_old_key_as_fallback(
    settings, alice, client_for, fallbacks, logged_in
):
    settings.SECRET_KEY = OLD_KEY
    client = client_for(alice)
    assert client.get("/").status_code == 200
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = fallbacks
    response = client.get("/")
    if logged_in:
        assert response.status_code == 200
        # Still logged in once the old key is dropped: the session took the
        # new key's signature on that request.
        settings.SECRET_KEY_FALLBACKS = []
        assert client.get("/").status_code == 200
    else:
        assert response.status_code == 302
        assert response["Location"] == "/accounts/login/?next=/"


@pytest.mark.parametrize(("fallbacks", "works"), [([OLD_KEY], True), ([], False)])
def test_a_reset_link_from_before_a_rotation_works_with_the_old_key_as_fallback(
    settings, make_user, fallbacks, works
):
    dora = make_user("dora")
    confirmed(dora, "dora@example.com")
    settings.SECRET_KEY = OLD_KEY
    ask_for_reset("dora@example.com")
    link = mailed_link(mail.outbox[0])
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = fallbacks
    client = Client()
    response = client.get(link, follow=True)
    if works:
        assert response.status_code == 200
        assert "Choose a new password" in response.text
        done = client.post(
            response.redirect_chain[-1][0],
            {"password1": "a-new-pass-phrase-9", "password2": "a-new-pass-phrase-9"},
        )
        assert done["Location"] == "/accounts/password/reset/key/done/"
        assert logged_in_as(login("dora", "a-new-pass-phrase-9")) == "dora"
    else:
        assert response.status_code == 400
        assert LINK_INVALID in response.text


@pytest.mark.processes
def test_make_serve_takes_the_key_from_a_file(tmp_path, secret_file):
    """`make serve` checks for a key before anything else: a key file will do
    (it then stops at the next refusal, before serving)."""
    returncode, stderr = make_serve(
        tmp_path,
        DJANGO_SECRET_KEY="",
        DJANGO_SECRET_KEY_FILE=secret_file("env-test-secret\n"),
        WEB_THREADS="abc",
    )
    assert returncode != 0
    assert stderr.splitlines()[0] == "WEB_THREADS must be a whole number, not 'abc'."
