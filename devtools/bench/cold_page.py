"""A page asked first in a new web process, as gunicorn's worker would answer it (bench_scale --cold).

Run as `python -m devtools.bench.cold_page PATH COOKIE`: it loads config.wsgi (which warms the
process, config/warmup.py, unless BERTH_WARMUP=0), asks PATH once through the WSGI application
with COOKIE, and prints one JSON line: the answer's status, wall and CPU milliseconds, statements.
`cold_pages` runs it in `times` fresh processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cold_pages(path: str, cookie: str, times: int) -> list[dict]:
    """Ask `path` first in `times` new processes; return each one's figures."""
    figures = []
    for _ in range(times):
        done = subprocess.run(
            [sys.executable, "-m", "devtools.bench.cold_page", path, cookie],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        figures.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return figures


def _ask(path: str, cookie: str) -> dict:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test import RequestFactory

    from config.wsgi import application

    seen: list[str] = []

    def count(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    host = (settings.ALLOWED_HOSTS or ["localhost"])[0].lstrip(".").replace("*", "localhost")
    environ = RequestFactory()._base_environ(PATH_INFO=path, HTTP_COOKIE=cookie, HTTP_HOST=host)
    status: list[str] = []
    cpu, wall = time.process_time(), time.perf_counter()
    with connection.execute_wrapper(count):
        b"".join(application(environ, lambda s, headers, *rest: status.append(s)))
    return {
        "status": int(status[0].split()[0]),
        "wallMs": round((time.perf_counter() - wall) * 1000, 1),
        "cpuMs": round((time.process_time() - cpu) * 1000, 1),
        "statements": len(seen),
    }


if __name__ == "__main__":
    print(json.dumps(_ask(sys.argv[1], sys.argv[2])))
