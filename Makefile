# Berth: `make run` serves the demo as production does, `make dev` with the autoreloading
# development server, `make test` runs every test. Each does its own set-up.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# gunicorn: threads, as requests that wait (agents' long-polls, creates waiting for the placer)
# hold theirs; at most half of a worker's threads wait at once (capacity/waits.py), and a stop
# ends every wait, so `make run` stops within a few seconds (config/gunicorn.conf.py).
WEB_WORKERS ?= 2
WEB_THREADS ?= 8
SECRET_KEY_FILE := .secret_key
# What `make run` serves with: DEBUG off and the demo's own secret key (yours when exported).
PROD_ENV = DJANGO_DEBUG=0 DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-$$(cat $(SECRET_KEY_FILE))}"

# The newest CPython >= 3.12 that has wheels for the embedded Postgres (pgserver: up to 3.12),
# then 3.13 (which needs DATABASE_URL), from PATH or pyenv.
PYTHON ?= $(shell for c in python3.12 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.12.*/bin/python3 2>/dev/null | sort -V | tail -n1) python3.13 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.13.*/bin/python3 2>/dev/null | sort -V | tail -n1) python3; do \
	  command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v $$c; break; }; done)

.PHONY: run dev test test-dates docs venv migrate seed static lint typecheck bench clean-db ha ha-down test-ha \
	slurm slurm-down test-slurm

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

# The demo's secret key: made once, readable by this user only, kept out of git (.gitignore).
$(SECRET_KEY_FILE): | venv
	@umask 077 && $(PY) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@.tmp && mv $@.tmp $@
	@echo "Made a secret key for the demo in $@"

# Hashed, compressed copies of the static files in staticfiles/ (git-ignored), which WhiteNoise serves.
static: venv $(SECRET_KEY_FILE)
	$(PROD_ENV) $(PY) manage.py collectstatic --no-input --verbosity 0

# The worker (`run_placer`: queued batches, ended reservations, pending retries) runs beside the
# server; when the server stops (Ctrl-C, `kill` of make, a port in use), the trap stops both.
run: seed static
	@echo "Berth on http://$(HOST):$(PORT)/  (users: operator, acme, globex; password berth-demo)"
	@trap 'kill $$worker $$server 2>/dev/null; wait' EXIT INT TERM; \
	$(PROD_ENV) $(PY) manage.py run_placer & worker=$$!; \
	$(PROD_ENV) $(VENV)/bin/gunicorn config.wsgi --config config/gunicorn.conf.py --bind $(HOST):$(PORT) --workers $(WEB_WORKERS) \
	  --threads $(WEB_THREADS) --access-logfile - --no-control-socket & server=$$!; \
	wait $$server

# Development: DEBUG on, the autoreloading server, static files from their folders; the worker too.
dev: seed
	@echo "Berth (development) on http://$(HOST):$(PORT)/  (users: operator, acme, globex; password berth-demo)"
	@trap 'kill $$worker $$server 2>/dev/null; wait' EXIT INT TERM; \
	DJANGO_DEBUG=1 $(PY) manage.py run_placer & worker=$$!; \
	DJANGO_DEBUG=1 $(PY) manage.py runserver $(HOST):$(PORT) & server=$$!; \
	wait $$server

# The documentation site (mkdocs.yml, docs/) into .site/ (git-ignored); --strict fails on a broken
# link, image or anchor.
docs: venv
	$(VENV)/bin/mkdocs build --strict --site-dir $(CURDIR)/.site

# The tests run in TEST_WORKERS processes (pytest-xdist), each on a test database of its own
# (tests/slurm all on one: they share the local Slurm cluster);
# `make test TEST_WORKERS=0` runs them in this one.
TEST_WORKERS ?= 2
test: venv
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir $(CURDIR)/.site
	@if [ -x /usr/bin/chromium ]; then echo "Browser tests: on (Chromium at /usr/bin/chromium)"; \
	else echo "Browser tests: SKIPPED - no /usr/bin/chromium (install it with: apt-get install -y chromium)"; fi
	@if command -v scontrol >/dev/null 2>&1; then echo "Slurm tests: on (the local cluster of make slurm)"; \
	  [ "$$(id -u)" != 0 ] || $(PY) -m devtools.slurm_cluster up; \
	else echo "Slurm tests: SKIPPED - no scontrol (make slurm installs Debian's Slurm and starts a local cluster)"; fi
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The tests that read the real clock's day (marked `dates`), again at fixed days from Monday to
# Sunday and a leap day, each under libfaketime with a database of its own (devtools/dates.py).
test-dates: venv
	@command -v faketime >/dev/null || { echo "make test-dates needs faketime: apt-get install -y faketime"; exit 1; }
	$(PY) -m devtools.dates $(PYTEST_ARGS)

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

# A local primary and synchronous standby (devtools/ha.py) on 127.0.0.1:55432 and :55433, in .ha/
# (git-ignored), from the PostgreSQL server binaries on the machine; `make ha-down` removes them.
ha: venv
	$(PY) -m devtools.ha up

ha-down: venv
	$(PY) -m devtools.ha down

# The failover tests (tests/ha): each builds its own pair like `make ha`, serves Berth on it, kills
# the primary mid-load and promotes the standby. Skipped, with the reason, where the binaries are missing.
test-ha: venv
	BERTH_HA=1 $(PY) -m pytest tests/ha $(PYTEST_ARGS)

# A local Slurm cluster for the bridge's tests (devtools/slurm_cluster.py): munge, slurmctld and two
# slurmd (berth-n1, berth-n2, 8 fake GPUs each) from Debian's packages, installed when missing, state
# in .slurm/ (git-ignored). Idempotent: a cluster that answers is left alone. `make slurm-down` stops it.
slurm: venv
	$(PY) -m devtools.slurm_cluster up

slurm-down: venv
	$(PY) -m devtools.slurm_cluster down

# The bridge's tests against that cluster (`make test` runs them too once it is up).
test-slurm: slurm
	$(PY) -m pytest tests/slurm $(PYTEST_ARGS)
