# Berth: `make run` serves the demo, `make test` runs every test. Both do their own set-up.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

# The newest CPython >= 3.12 that has wheels for the embedded Postgres (pgserver: up to 3.12),
# then 3.13 (which needs DATABASE_URL), from PATH or pyenv.
PYTHON ?= $(shell for c in python3.12 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.12.*/bin/python3 2>/dev/null | sort -V | tail -n1) python3.13 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.13.*/bin/python3 2>/dev/null | sort -V | tail -n1) python3; do \
	  command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v $$c; break; }; done)

.PHONY: run test venv migrate seed lint typecheck bench clean-db

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@if [ -z "$(PYTHON)" ]; then echo "Berth needs Python >= 3.12 (python3.12 recommended): install it, e.g. 'apt-get install python3.12' or 'pyenv install 3.12'."; exit 1; fi
	@echo "Using $(PYTHON) ($$($(PYTHON) --version))"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

migrate: venv
	$(PY) manage.py migrate --no-input

seed: migrate
	$(PY) manage.py seed_demo

# The worker (`run_placer`: queued batches, ended reservations, pending retries) runs beside the
# server; when the server stops (Ctrl-C, `kill` of make, a port in use), the trap stops both.
run: seed
	@echo "Berth on http://$(HOST):$(PORT)/  (users: operator, acme, globex; password berth-demo)"
	@trap 'kill $$worker $$server 2>/dev/null; wait' EXIT INT TERM; \
	$(PY) manage.py run_placer & worker=$$!; \
	$(PY) manage.py runserver $(HOST):$(PORT) & server=$$!; \
	wait $$server

test: venv
	@if [ -x /usr/bin/chromium ]; then echo "Browser tests: on (Chromium at /usr/bin/chromium)"; \
	else echo "Browser tests: SKIPPED - no /usr/bin/chromium (install it with: apt-get install -y chromium)"; fi
	$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy

bench: migrate
	$(PY) manage.py bench_placements

# Stop the embedded Postgres and delete its data (it is recreated on the next command).
clean-db:
	-runuser -u pgserver -- $$(ls -d $(CURDIR)/$(VENV)/lib/python3.*/site-packages/pgserver/pginstall/bin/pg_ctl) -D $(CURDIR)/.pgdata -w stop
	rm -rf .pgdata
