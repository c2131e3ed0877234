"""CPU and statements of what a request pays before its work: session, user, groups, tenants (or token).

Run by name against the demo (`seed_demo`), not collected by pytest:
`DJANGO_DEBUG=0 DJANGO_SECRET_KEY=x .venv/bin/python tests/identity/profile_who.py` (N requests each,
400 by default). docs/benchmarks.md (issue 60) quotes it.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client, RequestFactory  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from capacity import access  # noqa: E402
from config.api.auth import StrictTokenAuthentication  # noqa: E402

SESSIONS = import_string(next(m for m in settings.MIDDLEWARE if m.endswith("SessionMiddleware")))
AUTH = import_string(
    next(m for m in settings.MIDDLEWARE if m.endswith(("Authentication", "AuthenticationMiddleware")))
)


def _rules(user) -> None:
    access.scope_for(user)
    access.is_operator(user)
    access.tenant_ids(user)


def by_session(cookie: str):
    def run() -> None:
        request = RequestFactory().get("/")
        request.COOKIES[settings.SESSION_COOKIE_NAME] = cookie
        SESSIONS(lambda r: None).process_request(request)
        AUTH(lambda r: None).process_request(request)
        assert request.user.is_authenticated
        _rules(request.user)

    return run


def by_token(key: str):
    def run() -> None:
        user, _ = StrictTokenAuthentication().authenticate(
            RequestFactory().get("/", HTTP_AUTHORIZATION=f"Token {key}")
        )
        _rules(user)

    return run


def statements(run) -> int:
    seen = []

    def count(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        run()
    return len(seen)


def main() -> None:
    n = int(os.environ.get("N", "400"))
    for who in ("operator", "acme"):
        user = get_user_model().objects.get(username=who)
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        key = Token.objects.get_or_create(user=user)[0].key
        for name, run in (("session", by_session(cookie)), ("token", by_token(key))):
            for _ in range(20):
                run()
            count = statements(run)
            started = time.process_time()
            for _ in range(n):
                run()
            cpu_ms = (time.process_time() - started) / n * 1000
            print(json.dumps({"who": who, "auth": name, "cpu_ms": round(cpu_ms, 3), "statements": count}))


if __name__ == "__main__":
    main()
