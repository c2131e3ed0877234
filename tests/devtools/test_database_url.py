"""DATABASE_URL takes libpq's multi-host form; hosts that do not answer are named at start."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db.backends.postgresql.base import DatabaseWrapper

from config import database_url

ROOT = Path(__file__).parents[2]
NOBODY = "127.0.0.1:1"  # nothing listens on port 1: connection refused at once


def test_one_host_parses_as_before_with_a_connect_timeout_and_keepalives():
    config = database_url.parse("postgresql://u:p@db.example:6000/berth?sslmode=require")
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == (
        "db.example",
        6000,
        "berth",
        "u",
    )
    assert config["OPTIONS"] == {
        "sslmode": "require",
        "connect_timeout": 5,
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }


def test_several_hosts_become_libpq_lists_and_default_to_read_write():
    config = database_url.parse("postgresql://u@db1:5433,db2,[fd00::3]:5434/berth?connect_timeout=2")
    assert config["HOST"] == "db1,db2,fd00::3"
    assert config["PORT"] == "5433,5432,5434"
    assert config["NAME"] == "berth"
    assert config["OPTIONS"]["target_session_attrs"] == "read-write"
    assert config["OPTIONS"]["connect_timeout"] == 2
    assert database_url.hosts(config) == [("db1", "5433"), ("db2", "5432"), ("fd00::3", "5434")]


def test_an_explicit_target_session_attrs_is_kept():
    config = database_url.parse("postgresql://u@db1,db2/berth?target_session_attrs=primary")
    assert config["OPTIONS"]["target_session_attrs"] == "primary"


@pytest.mark.parametrize("hostlist", ["db1,:5432", "db1,db2:port", "db1,[fd00::1"])
def test_a_host_list_that_cannot_be_read_stops_the_start_naming_the_host(hostlist):
    ran = _python(
        "from django.conf import settings; settings.DATABASES",
        DATABASE_URL=f"postgresql://u@{hostlist}/berth",
    )
    assert ran.returncode != 0
    assert "ImproperlyConfigured: DATABASE_URL: cannot read the host" in ran.stderr


@pytest.mark.django_db
def test_a_connection_through_a_host_list_skips_the_host_that_does_not_answer():
    wrapper = DatabaseWrapper(_with_dead_host_first())  # its own connection, default alias
    try:
        with wrapper.cursor() as cur:
            cur.execute("SELECT current_database(), pg_is_in_recovery()")
            assert cur.fetchone() == (settings.DATABASES["default"]["NAME"], False)
    finally:
        wrapper.close()


@pytest.mark.django_db
def test_probe_names_each_host_that_does_not_answer():
    states = database_url.probe(_with_dead_host_first())
    assert [s.role for s in states] == ["down", "primary"]
    assert database_url.describe(states) == f"DATABASE_URL: {NOBODY} does not answer (Connection refused)"


def test_probe_says_no_host_takes_writes_when_none_answers():
    states = database_url.probe(database_url.parse(f"postgresql://u@{NOBODY},127.0.0.1:2/berth"))
    assert database_url.describe(states) == (
        "DATABASE_URL: no host takes writes: 127.0.0.1:1 does not answer (Connection refused); "
        "127.0.0.1:2 does not answer (Connection refused)"
    )


DEAD = f"postgresql://berth@{NOBODY},127.0.0.1:2/berth"
NAMED = "no host takes writes: 127.0.0.1:1 does not answer (Connection refused)"


def test_migrate_stops_naming_hosts_that_do_not_answer():
    ran = _command("manage.py", "migrate", "--no-input")
    assert ran.returncode != 0
    assert f"(berth.E001) DATABASE_URL: {NAMED}" in ran.stderr


def test_the_worker_stops_at_start_naming_hosts_that_do_not_answer():
    ran = _command("manage.py", "run_placer", "--once")
    assert ran.returncode != 0
    assert f"CommandError: DATABASE_URL: {NAMED}" in ran.stderr


def test_gunicorn_stops_at_start_naming_hosts_that_do_not_answer():
    gunicorn = Path(sys.executable).with_name("gunicorn")
    ran = _run(
        [str(gunicorn), "config.wsgi", "--config", "config/gunicorn.conf.py", "--bind", "127.0.0.1:0"],
        DATABASE_URL=DEAD,
    )
    assert ran.returncode != 0
    assert f"Error: DATABASE_URL: {NAMED}" in ran.stderr


def _with_dead_host_first() -> dict:
    config = {**settings.DATABASES["default"], "OPTIONS": dict(settings.DATABASES["default"]["OPTIONS"])}
    (host, port), *_ = database_url.hosts(config)
    config["OPTIONS"].pop("host", None)
    config["HOST"], config["PORT"] = f"127.0.0.1,{host}", f"1,{port}"
    return config


def _command(*args: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, *args], DATABASE_URL=DEAD)


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-c", code], **env)


def _run(command: list[str], **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_SECRET_KEY": "x" * 50, **env}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
