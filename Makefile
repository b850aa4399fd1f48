# One entry point for humans and CI. Needs only Python >= 3.12 and make.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The production targets (release, serve) install the runtime dependencies only.
RUNTIME_STAMP := $(VENV)/.installed-runtime
HOST ?= 127.0.0.1
PORT ?= 8000
# axe-core (package-lock.json) for the browser accessibility audit, installed only
# where npm exists; without it the audit skips and says how to enable it.
NPM := $(shell command -v npm 2>/dev/null)
NODE_STAMP := node_modules/.installed

.PHONY: help install run release serve backup quick test test-sqlite test-postgres bench bench-servers lint format messages superuser check clean

# Each target's line carries its description after "## ": `make help` lists them.
help: ## this list
	@awk -F ':.*## ' '/^[a-z-]+:.*## / { printf "make %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

# Find a Python >= 3.12: $(PYTHON) if given, then the usual names, then pyenv's and
# Debian's interpreters (pyenv shims on PATH fail unless a version is selected).
$(PY):
	@set -e; \
	is_ok() { "$$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }; \
	if [ -n "$(PYTHON)" ]; then \
	  is_ok "$(PYTHON)" || { echo "PYTHON=$(PYTHON) is not a working Python >= 3.12" >&2; exit 1; }; \
	  found="$(PYTHON)"; \
	else \
	  pyenv_root=$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv"); \
	  found=""; \
	  for c in python3.14 python3.13 python3.12 python3 \
	      $$(ls -d "$$pyenv_root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV) \
	      /usr/bin/python3.14 /usr/bin/python3.13 /usr/bin/python3.12 /usr/local/bin/python3.13; do \
	    if is_ok "$$c"; then found="$$c"; break; fi; \
	  done; \
	  [ -n "$$found" ] || { echo "No Python >= 3.12 found. Install one, or run: make PYTHON=/path/to/python3.12 ..." >&2; exit 1; }; \
	fi; \
	echo "Creating $(VENV) with $$found ($$("$$found" -V))"; \
	"$$found" -m venv $(VENV)

# Direct dependencies come from pyproject.toml; requirements.lock pins the whole tree.
# $(call pip_install,EXTRAS): its `dependencies`, plus those of the optional EXTRAS.
pip_install = $(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock \
	  $$($(PY) -c 'import sys, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(" ".join(f"\"{d}\"" for d in p["dependencies"] + [d for e in sys.argv[1:] for d in p["optional-dependencies"][e]]))' $(1) | xargs)

$(STAMP): pyproject.toml requirements.lock | $(PY)
	$(call pip_install,dev)
	@touch $@

# A production host: no pytest, Playwright or gunicorn.
$(RUNTIME_STAMP): pyproject.toml requirements.lock | $(PY)
	$(call pip_install)
	@touch $@

install: $(STAMP) ## create .venv and install the pinned dependencies

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# A development checkout: .env (read by the settings) turns debug on for every
# manage.py command here. Written once; edit it freely. `make serve` sets
# DJANGO_DEBUG=0 over it.
.env:
	@printf '%s\n' '# Written by `make run`: this checkout runs in development mode.' \
	  'DJANGO_DEBUG=1' > $@
	@echo "Wrote .env (DJANGO_DEBUG=1): manage.py commands here run in development mode."

# One server process (uvicorn, see tictactoe_site/server/serve.py) serves the pages and
# the live-update streams, with the task worker (email) beside it; in development
# the server restarts itself when the code changes.
run: install .env ## install, set this checkout up for development (.env), migrate SQLite, serve at http://127.0.0.1:8000 (HOST, PORT)
	$(PY) manage.py migrate --noinput
	WEB_RELOAD=$${WEB_RELOAD:-1} HOST=$(HOST) PORT=$(PORT) $(PY) -m tictactoe_site.server.serve

# Production: needs DJANGO_SECRET_KEY or DJANGO_SECRET_KEY_FILE (docs/deploying.md).
# $(call needs_key,WHAT THE TARGET DOES) stops the target with the fix when neither
# is set.
needs_key = [ -n "$$DJANGO_SECRET_KEY$$DJANGO_SECRET_KEY_FILE" ] || { echo "make $@ $(1) and needs DJANGO_SECRET_KEY:" \
	  "set it to a long random value, e.g. export DJANGO_SECRET_KEY=\"\$$(openssl rand -base64 48)\"" \
	  "(docs/deploying.md). For local development use make run." >&2; exit 1; }

# A release, once per release from one host (or by each host's `make serve`):
# migrate under a lock on the database (games/management/commands/migrate.py),
# so hosts releasing at once migrate once, and collect the static files.
release: export DJANGO_DEBUG := 0
release: $(RUNTIME_STAMP) ## production release (debug off; needs DJANGO_SECRET_KEY): runtime dependencies, migrate under a lock, collectstatic
	@$(call needs_key,prepares the production server)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0

# WEB_CONCURRENCY processes (default 2), each serving pages and streams, and the
# task worker (tictactoe_site/server/serve.py).
serve: export DJANGO_DEBUG := 0
serve: ## production server (debug off; needs DJANGO_SECRET_KEY): make release, then serve
	@$(call needs_key,runs the production server)
	@$(MAKE) --no-print-directory release
	HOST=$(HOST) PORT=$(PORT) exec $(PY) -m tictactoe_site.server.serve 2>&1

# A consistent copy of the database, taken while the site runs (PostgreSQL:
# pg_dump's custom format; SQLite: its online backup), into BACKUP_DIR, which only
# this user may read (games/management/commands/backup.py). Needs the server's
# variables (DATABASE_URL, DJANGO_SECRET_KEY); restoring: docs/operations.md.
BACKUP_DIR ?= backups
backup: $(RUNTIME_STAMP) ## a consistent backup of the database into BACKUP_DIR (default backups/); prints its path
	$(PY) manage.py backup --dir "$(BACKUP_DIR)"

# The suite runs on every core (pytest-xdist; TEST_WORKERS=1 for one at a time).
# A file's tests stay on one worker, so a module's served app starts once. Tests
# marked `processes` start other processes (served apps, browsers) and `make quick`
# leaves them out; tests marked `timing` measure time across processes, so each
# pass runs them last, alone (tests/support/tiers.py).
TEST_WORKERS ?= auto
PYTEST := $(PY) -m pytest
PARALLEL = -n $(TEST_WORKERS) --dist loadfile

# A quarter of the fuzz tests' examples and of the state machine's runs
# (tests/support/fuzz.py): make test runs all.
quick: install ## every in-process test on SQLite, on every core, a quarter of the fuzzing: about a minute
	env -u DATABASE_URL FUZZ_SCALE=0.25 $(PYTEST) $(PARALLEL) -m "not processes" -q

# make test runs on SQLite, then once more on PostgreSQL at TEST_POSTGRES_URL when
# that server answers (what can depend on the engine: tests/support/engines.py),
# whatever DATABASE_URL holds; REQUIRE_POSTGRES=1 (CI) makes
# an unreachable PostgreSQL an error instead of a note. Each pass leaves JUnit
# reports in TEST_REPORTS: .ci/run fails unless both ran (.ci/check_test_reports.py).
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/tictactoe
TEST_REPORTS := artifacts/test-reports
PG_ANSWERS = $(PY) -c 'import sys, psycopg; psycopg.connect(sys.argv[1], dbname="postgres", connect_timeout=3).close()' "$(TEST_POSTGRES_URL)" 2>/dev/null
# $(call test_pass,NAME): every test but the timing ones on every core, then those
# alone; a report for each.
test_pass = $(PYTEST) --junitxml=$(TEST_REPORTS)/$(1).xml $(PARALLEL) -m "not timing" && \
	$(PYTEST) --junitxml=$(TEST_REPORTS)/$(1)-timing.xml -m timing

test: install $(if $(NPM),$(NODE_STAMP)) ## the whole suite on SQLite, then what depends on the database on PostgreSQL if it answers
	@rm -f $(TEST_REPORTS)/*.xml
	@[ -z "$$DATABASE_URL" ] || echo "== make test ignores DATABASE_URL: SQLite, then TEST_POSTGRES_URL"
	@$(MAKE) --no-print-directory test-sqlite || exit 1; \
	if $(PG_ANSWERS); then \
	  $(MAKE) --no-print-directory test-postgres; \
	elif [ "$(REQUIRE_POSTGRES)" = 1 ]; then \
	  echo "PostgreSQL does not answer at $(TEST_POSTGRES_URL) (REQUIRE_POSTGRES=1)" >&2; exit 1; \
	else \
	  echo "== PostgreSQL does not answer at $(TEST_POSTGRES_URL): ran the SQLite pass only" \
	    "(start PostgreSQL or set TEST_POSTGRES_URL for the second pass)"; \
	fi

test-sqlite: install $(if $(NPM),$(NODE_STAMP)) ## the whole suite on SQLite only
	@echo "== test suite on SQLite"
	unset DATABASE_URL; $(call test_pass,sqlite)

test-postgres: install $(if $(NPM),$(NODE_STAMP)) ## the PostgreSQL pass only (TEST_POSTGRES_URL)
	@echo "== test suite on PostgreSQL ($(TEST_POSTGRES_URL))"
	export DATABASE_URL="$(TEST_POSTGRES_URL)"; $(call test_pass,postgresql)

# Load comes from wrk (Debian package); installed here when apt-get can.
# The fleet section (PostgreSQL) runs nginx and its own redis-server.
bench: install ## benchmark every page against Django's floor, then the fleet (needs wrk, nginx, redis-server; BENCH_ARGS)
	@[ -x /usr/bin/wrk ] && [ -x /usr/sbin/nginx ] && [ -x /usr/bin/redis-server ] || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get install -y -qq wrk nginx redis-server >/dev/null; } || \
	  { echo "make bench needs wrk, nginx and redis-server: sudo apt-get install wrk nginx redis-server" >&2; exit 1; }
	$(PY) -m tests.bench.run $(BENCH_ARGS)

# The game page under each candidate server (tests/bench/servers.py).
bench-servers: install ## the game page under each candidate server (needs wrk)
	@command -v wrk >/dev/null || { echo "make bench-servers needs wrk: sudo apt-get install wrk" >&2; exit 1; }
	$(PY) -m tests.bench.servers $(BENCH_ARGS)

# The JavaScript of static/ is linted by Biome (biome.json; a dev dependency in
# package.json, installed by npm). Without npm the Python lint runs and says how
# to add the JavaScript one; in CI (CI=true, where .ci/run installs npm) a lint
# without Biome is a failure.
BIOME := node_modules/.bin/biome
lint: install $(if $(NPM),$(NODE_STAMP)) ## ruff check, ruff format --check, the import contracts (import-linter), migrations old hosts can run (django-migration-linter, where PostgreSQL answers), and Biome over static/*.js (where npm is)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	TEST_POSTGRES_URL="$(TEST_POSTGRES_URL)" $(PY) -m tests.support.migration_lint
	@if [ -x $(BIOME) ]; then \
	  echo "$(BIOME) lint --error-on-warnings"; $(BIOME) lint --error-on-warnings; \
	elif [ "$$CI" = true ]; then \
	  echo "make lint: no $(BIOME) in CI (npm ci installs it from package-lock.json)" >&2; exit 1; \
	else \
	  echo "== JavaScript lint skipped: install Node.js with npm, then make lint again (npm ci installs Biome)"; \
	fi

format: install ## ruff format and ruff check --fix
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The translation catalogs (docs/translating.md; tests/support/catalogs.py): extract
# the marked messages of every language but English into tictactoe_site/locale
# (templates/) and each app's locale/, then compile each .po to the .mo committed
# beside it, with babel. Extracting needs GNU gettext (apt install gettext);
# without it this only compiles, so a fresh checkout needs only Python.
messages: install ## update the translation catalogs from the code (needs GNU gettext), then compile them
	$(PY) -m tests.support.catalogs

check: install .env ## Django system checks and missing migrations
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

superuser: install .env ## migrate, then create an admin account
	$(PY) manage.py migrate --noinput
	$(PY) manage.py createsuperuser

clean: ## remove .venv, .env, the SQLite database, the session cache, collected static files, node_modules
	rm -rf $(VENV) .env .cache db.sqlite3 db.sqlite3-wal db.sqlite3-shm db.sqlite3.migrate-lock db.sqlite3.turn-emails-lock staticfiles node_modules artifacts
