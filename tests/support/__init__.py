"""Code the tests and benches share, none of it tests itself.

- `served`: the app as `make serve` runs it, in a subprocess on a fresh database
  (`ServedApp`, `serving`); `browser`: the HTTP client that talks to it;
  `storm`: concurrent players against it.
- `hosts`: several server processes on one database and broker, as if on several
  hosts, and the clients of their live streams (the live-update tests).
- `asgi`: the live streams driven in-process through the real ASGI app (`Stream`).
- `hostile`: sends a request and fails the test on a 5xx or on a turned-down
  request that changed stored state (the adversarial tests); `bodies`: two
  pages compared without what differs between any two answers.
- `fuzz`: the fuzz tests' budget, hypothesis strategies, routes and `world`.
- `account_client`: sign up, log in and read mailed links in the account tests.
- `smtp_sink`: a mail relay on loopback (accepting, silent or gated).
- `private_postgres`: a PostgreSQL server of a test's own, to stop mid-play.
- `engines`: which pass runs a test: the `postgresql_only`/`sqlite_only` markers,
  and the SQLite pass alone for what cannot depend on the engine (hooks in
  conftest.py).
- `tiers`: the `processes` and `timing` markers, what `make quick` leaves out and
  what runs alone (a plugin: `-p tests.support.tiers` in pyproject.toml).
- `catalogs`: the translation catalogs: what `make messages` runs (seed, extract,
  compile with babel) and the checks of tests/project/test_translations.py;
  `template_text`: the words a template shows outside the translation tags.

Fixtures stay in tests/conftest.py, where pytest finds them (it registers the
ones defined here). What each test module proves: docs/testing.md.
"""
