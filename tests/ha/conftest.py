"""Berth as it runs in production, against a primary and its synchronous standby (devtools/ha.py).

    16 clients ──HTTP──▶ gunicorn (2 × 8) ──┐
                         run_placer ────────┼── DATABASE_URL=127.0.0.1:55432,127.0.0.1:55433
                                            ▼        (libpq tries both, keeps the read-write one)
                  primary :55432 ──synchronous WAL──▶ standby :55433

Each test gets a fresh pair with the demo seeded and its own servers: a failover leaves the pair
one server short. These tests run with `make test-ha` (BERTH_HA=1); elsewhere they are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devtools import ha
from devtools.bench.load import served

ROOT = Path(__file__).resolve().parents[2]
DBNAME = "berth"


def pytest_collection_modifyitems(config, items):
    if os.environ.get("BERTH_HA") == "1":
        return
    skip = pytest.mark.skip(reason="the failover tests run with `make test-ha` (BERTH_HA=1)")
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(skip)


@dataclass
class Stack:
    """A running pair, and Berth on it: the URL clients use, and what the demo's plan made."""

    pair: ha.Pair
    env: dict[str, str]
    url: str
    token: str
    operator_token: str
    tenant: str
    pool: str
    cookie: str
    worker: subprocess.Popen
    worker_log: Path
    server_log: Path

    def sql(self, port: int, query: str, *args) -> list[tuple]:
        """Run one statement on the server at `port` (autocommit) and return its rows."""
        with psycopg.connect(
            host="127.0.0.1", port=port, user="postgres", dbname=DBNAME, autocommit=True, connect_timeout=3
        ) as conn:
            cur = conn.execute(query, args or None)
            return cur.fetchall() if cur.description else []

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        """Run a management command against the pair (whichever server takes writes)."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture
def stack(monkeypatch, tmp_path):
    """Build the pair, migrate and seed Berth on it, serve it and run its worker; tear all down."""
    yield from _stack(monkeypatch, tmp_path, replica=False)


@pytest.fixture
def replica_stack(monkeypatch, tmp_path):
    """As `stack`, with the standby as DATABASE_REPLICA_URL (at most 5 s of lag, pinned 5 s)."""
    yield from _stack(monkeypatch, tmp_path, replica=True)


def _stack(monkeypatch, tmp_path, replica: bool):
    try:
        pair = ha.pair()
    except ha.Missing as why:
        pytest.skip(f"skipped: {why}")
    ha.up(pair)
    try:
        with psycopg.connect(pair.url(pair.primary_port), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DBNAME}")
        env = {
            **os.environ,
            "DATABASE_URL": pair.url(pair.primary_port, pair.standby_port, dbname=DBNAME),
            "BERTH_PLACER": "pool-lease",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "ha-tests-" + "x" * 50),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        }
        if replica:
            env["DATABASE_REPLICA_URL"] = f"postgresql://postgres@127.0.0.1:{pair.standby_port}/{DBNAME}"
            # Wide enough for a cordon and a read on a slow, loaded machine to fall inside it
            # (2 s did not, on 2026-12-07); test_replica waits past it.
            env["BERTH_REPLICA_MAX_LAG_SECONDS"] = "5"
            env["BERTH_REPLICA_PIN_SECONDS"] = "5"
            env["BERTH_REPLICA_RETRY_SECONDS"] = "1"
        (tmp_path / "metrics").mkdir()
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        for command in (["migrate", "--no-input", "-v0"], ["seed_demo"]):
            subprocess.run(
                [sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True
            )
        made = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", _PLAN],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        plan = json.loads(made.stdout.strip().splitlines()[-1])
        worker_log = tmp_path / "run_placer.log"
        with open(worker_log, "w") as log:
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "run_placer", "--interval", "1"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=log,
            )
        try:
            with served(log_path=tmp_path / "gunicorn.log") as url:
                yield Stack(
                    pair,
                    env,
                    url,
                    plan["token"],
                    plan["operator_token"],
                    plan["tenant"],
                    plan["pool"],
                    plan["cookie"],
                    worker,
                    worker_log,
                    tmp_path / "gunicorn.log",
                )
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    finally:
        if os.environ.get("BERTH_HA_KEEP") != "1":  # keep .ha/ (logs, data) to look into a failure
            ha.down(pair)


# The load benchmark's plan: a tenant with room, an API writer's token, an operator's session.
_PLAN = """
import json
from django.contrib.auth.models import User
from identity.tokens import issue_token
from devtools.bench.load import plan
p = plan()
operator = issue_token(User.objects.get(username="load-reader"), days=1).key
print(json.dumps({"token": p.token, "operator_token": operator, "tenant": p.tenant, "pool": p.pool, "cookie": p.cookies[0]}))
"""
