"""DATABASE_URL's forms (tictactoe_site.lib.database_url): one host as
dj-database-url reads it, libpq's multi-host form for a primary and its
standbys, and a readable refusal, naming the variable, of what neither is."""

import pytest

from tictactoe_site.lib.database_url import database_from_url
from tictactoe_site.lib.env import ConfigurationError

DEFAULT = "sqlite:///default.sqlite3"


def parsed(monkeypatch, url: str) -> dict:
    monkeypatch.delenv("DATABASE_URL_FILE", raising=False)
    monkeypatch.setenv("DATABASE_URL", url)
    return database_from_url("DATABASE_URL", DEFAULT)


def test_several_hosts_become_libpq_comma_lists_with_the_url_options(monkeypatch):
    database = parsed(
        monkeypatch,
        "postgres://app:s%40cret@db1.internal:5432,db2.internal:5433/ttt"
        "?target_session_attrs=read-write&sslmode=require",
    )
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert database["HOST"] == "db1.internal,db2.internal"
    assert database["PORT"] == "5432,5433"
    assert (database["USER"], database["PASSWORD"], database["NAME"]) == (
        "app",
        "s@cret",
        "ttt",
    )
    assert database["OPTIONS"] == {
        "target_session_attrs": "read-write",
        "sslmode": "require",
    }


def test_hosts_without_ports_use_the_default_port(monkeypatch):
    database = parsed(monkeypatch, "postgresql://app@db1,db2,db3/ttt")
    assert database["HOST"] == "db1,db2,db3"
    assert database["PORT"] == ""


def test_a_port_left_out_of_one_host_is_libpqs_empty_item(monkeypatch):
    database = parsed(monkeypatch, "postgres://app@[::1]:5432,db2/ttt")
    assert database["HOST"] == "::1,db2"
    assert database["PORT"] == "5432,"


def test_one_host_is_read_as_before(monkeypatch):
    database = parsed(monkeypatch, "postgres://app:pw@db.internal:6432/ttt")
    assert (database["HOST"], database["PORT"], database["NAME"]) == (
        "db.internal",
        6432,
        "ttt",
    )


def test_the_file_variable_holds_the_multi_host_form_too(monkeypatch, tmp_path):
    secret = tmp_path / "database_url"
    secret.write_text("postgres://app@db1:5432,db2:5432/ttt\n")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATABASE_URL_FILE", str(secret))
    database = database_from_url("DATABASE_URL", DEFAULT)
    assert (database["HOST"], database["PORT"]) == ("db1,db2", "5432,5432")


def test_unset_is_the_default(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("DATABASE_URL_FILE", raising=False)
    database = database_from_url("DATABASE_URL", DEFAULT)
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == "default.sqlite3"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "postgres://app:secret@db1:5432,:5433/ttt",
            "DATABASE_URL lists an empty host: write HOST1:PORT1,HOST2:PORT2.",
        ),
        (
            "postgres://app:secret@db1:54x2,db2/ttt",
            "DATABASE_URL gives host db1 the port '54x2': a port is a number "
            "from 1 to 65535.",
        ),
        (
            "postgres://app:secret@db1:70000,db2/ttt",
            "DATABASE_URL gives host db1 the port '70000': a port is a number "
            "from 1 to 65535.",
        ),
        (
            "postgres://app:secret@[::1]5432,db2/ttt",
            "DATABASE_URL names a host it cannot read: '[::1]5432'.",
        ),
        (
            "postgres://app:secret@[::1:5432,db2/ttt",
            "DATABASE_URL is not a database URL Django can use: write it as "
            "scheme://user:password@host:port/name, its parts percent-encoded "
            "(docs/settings.md).",
        ),
        (
            "mysql://app:secret@db1,db2/ttt",
            "DATABASE_URL names several hosts, which only a PostgreSQL URL may do.",
        ),
        (
            "postgres://app:secret@db1:port/ttt",
            "DATABASE_URL is not a database URL Django can use: write it as "
            "scheme://user:password@host:port/name, its parts percent-encoded "
            "(docs/settings.md).",
        ),
        (
            "nosuchdb://app:secret@db1/ttt",
            "DATABASE_URL is not a database URL Django can use: write it as "
            "scheme://user:password@host:port/name, its parts percent-encoded "
            "(docs/settings.md).",
        ),
    ],
)
def test_what_it_cannot_read_stops_the_start_without_the_password(
    monkeypatch, url, message
):
    with pytest.raises(ConfigurationError) as refused:
        parsed(monkeypatch, url)
    assert str(refused.value) == message
