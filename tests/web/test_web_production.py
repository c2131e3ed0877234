"""Served as production serves: settings from the environment, `check --deploy`, TLS headers, gunicorn
with WhiteNoise. Each runs Berth in its own process with the production environment."""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_DEBUG": "0",
    "BERTH_TLS": "1",
    "DJANGO_ALLOWED_HOSTS": "berth.example",
}


def environment(**values):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BERTH_", "EMAIL_"))}
    return {**base, "DJANGO_SETTINGS_MODULE": "config.settings", **values}


def manage(*args, **values):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(**values),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_the_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_an_empty_secret_key_is_refused_at_start():
    result = manage("check", **{**PRODUCTION, "DJANGO_SECRET_KEY": ""})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is set but empty" in result.stderr


def test_debug_off_without_a_secret_key_is_refused_at_start():
    result = manage("check", DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off." in result.stderr


REQUESTS = """
from django.test import Client
client = Client()
plain = client.get("/accounts/login/", HTTP_HOST="berth.example")
print("plain", plain.status_code, plain["Location"])
secure = client.get("/accounts/login/", HTTP_HOST="berth.example", HTTP_X_FORWARDED_PROTO="https")
print("secure", secure.status_code)
print("hsts", secure["Strict-Transport-Security"])
print("csrf-cookie-secure", secure.cookies["csrftoken"]["secure"])
from django.conf import settings
print("session-cookie-secure", settings.SESSION_COOKIE_SECURE)
"""


def test_behind_tls_http_is_redirected_and_https_answers_with_hsts_and_secure_cookies(tmp_path):
    # Pages name hashed static files: collected first, as `make run` does (a clean clone has none).
    values = {**PRODUCTION, "BERTH_STATIC_ROOT": str(tmp_path / "static")}
    collected = manage("collectstatic", "--no-input", "--verbosity", "0", **values)
    assert collected.returncode == 0, collected.stderr
    result = manage("shell", "--verbosity", "0", "-c", REQUESTS, **values)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["plain"] == "301 https://berth.example/accounts/login/"
    assert lines["secure"] == "200"
    assert lines["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert lines["csrf-cookie-secure"] == "True"
    assert lines["session-cookie-secure"] == "True"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


@pytest.fixture
def gunicorn(tmp_path):
    """Berth under gunicorn as `make run` starts it, static files collected first; yields its URL."""
    values = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "0",
        "BERTH_STATIC_ROOT": str(tmp_path / "static"),
    }
    collected = manage("collectstatic", "--no-input", "--verbosity", "0", **values)
    assert collected.returncode == 0, collected.stderr
    port = free_port()
    gunicorn = [
        ROOT / ".venv/bin/gunicorn", "config.wsgi", "--config", "config/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"
    ]  # fmt: skip
    server = subprocess.Popen(
        [*gunicorn, "--workers", "1", "--threads", "2", "--no-control-socket"],
        cwd=ROOT,
        env=environment(**values),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_gunicorn_serves_hashed_static_files_and_berths_own_not_found_page(gunicorn):
    status, headers, login = fetch(f"{gunicorn}/accounts/login/")
    assert status == 200
    assert headers["Server"] == "Berth"  # not gunicorn's name
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    css = re.search(r'href="(/static/berth\.[0-9a-f]{12}\.css)"', login).group(1)
    status, headers, body = fetch(gunicorn + css)
    assert status == 200 and ".topbar" in body
    assert headers["Cache-Control"] == "max-age=315360000, public, immutable"

    status, _, page = fetch(f"{gunicorn}/pool/h100-prod/")
    assert status == 404
    assert "<h1>Not found</h1>" in page and "URLconf" not in page
