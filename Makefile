# One entry point for humans and CI. Needs only Python >= 3.12 and make.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help install run serve test lint format superuser check clean

help:
	@echo "make run        install, migrate the SQLite database, serve at http://$(HOST):$(PORT)"
	@echo "make serve      production server (debug off; needs DJANGO_SECRET_KEY)"
	@echo "make test       install, then run the whole test suite"
	@echo "make lint       ruff check + ruff format --check"
	@echo "make format     ruff format + ruff check --fix"
	@echo "make superuser  create an admin account"
	@echo "make clean      remove .venv, the database and collected static files"

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
$(STAMP): pyproject.toml requirements.lock | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock \
	  $$($(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(" ".join(f"\"{d}\"" for d in p["dependencies"] + p["optional-dependencies"]["dev"]))' | xargs)
	@touch $@

install: $(STAMP)

# One server process (uvicorn, see tictactoe_site/serve.py) serves the pages and
# the live-update streams; it restarts itself when the code changes.
run: install
	export DJANGO_DEBUG=$${DJANGO_DEBUG:-1}; \
	$(PY) manage.py migrate --noinput && \
	WEB_RELOAD=$${WEB_RELOAD:-1} HOST=$(HOST) PORT=$(PORT) $(PY) -m tictactoe_site.serve

# Production: debug off (DJANGO_SECRET_KEY required), WEB_CONCURRENCY processes.
serve: install
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py migrate --noinput
	WEB_CONCURRENCY=$${WEB_CONCURRENCY:-2} HOST=$(HOST) PORT=$(PORT) $(PY) -m tictactoe_site.serve

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

check: install
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

superuser: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py createsuperuser

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm staticfiles
