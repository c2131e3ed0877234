"""Load benchmark (bench_load): signed-in readers and API writers at once, over loopback only.

`readers` threads each ask for pool pages and node pages back to back (a signed-in operator's
session, no pause; `people` operators share them out, one by default) while `writers` threads each book one GPU through the API and release it again,
for `seconds`. Every answer is timed from the client's side, connect to last byte read, each on a
connection of its own as a reverse proxy sends them. The server is Berth under gunicorn as `make
run` serves it (2 processes of 8 threads), started on a free loopback port for the run, or one
already running on loopback (`url`). Bounded: at most MAX_CLIENTS clients, MAX_SECONDS seconds,
loopback addresses only. Last it checks that nothing is double-booked.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from importlib import import_module
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, User
from django.utils import timezone

from capacity.audit import booking_drift
from capacity.models import Quota
from capacity.models.quota import DEFAULT_RESOURCE
from devtools.bench.placements import _pct
from identity.tokens import issue_token
from inventory.models import Node, Pool, Tenant

MAX_CLIENTS = 256
MAX_SECONDS = 600
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
ROOT = Path(__file__).resolve().parents[2]


class LoadError(ValueError):
    """A load run that would leave loopback or its bounds."""


@dataclass
class Plan:
    """Who asks what: the readers' session cookies (one per operator) and paths, the writers' token,
    tenant and pool."""

    cookies: list[str]
    paths: list[str]
    token: str
    tenant: str
    pool: str


@dataclass
class Tally:
    """Answers of one kind: each one's milliseconds, and the failures with a sample of why."""

    ms: list[float] = field(default_factory=list)
    errors: int = 0
    why: list[str] = field(default_factory=list)

    def failed(self, reason: str) -> None:
        self.errors += 1
        if len(self.why) < 5:
            self.why.append(reason)


def check_bounds(readers: int, writers: int, seconds: float, url: str | None, people: int = 1) -> None:
    """Refuse a run past the bounds or off loopback."""
    if readers < 0 or writers < 0 or not 0 < readers + writers <= MAX_CLIENTS:
        raise LoadError(f"readers + writers: from 1 to {MAX_CLIENTS}")
    if not 1 <= people <= max(readers, 1):
        raise LoadError("people: from 1 to the number of readers")
    if not 0 < seconds <= MAX_SECONDS:
        raise LoadError(f"seconds: more than 0, at most {MAX_SECONDS}")
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname not in LOOPBACK or parts.path not in ("", "/"):
            raise LoadError(
                "url: http://127.0.0.1:PORT (or localhost, [::1]) only: a load run stays on this machine"
            )


def plan(max_paths: int = 400, people: int = 1) -> Plan:
    """Make (or reuse) the readers (`people` operators), the writer and their credentials; pick the
    pages to read."""
    group, _ = Group.objects.get_or_create(name="operators")
    cookies = []
    for n in range(1, people + 1):
        reader, _ = User.objects.get_or_create(username="load-reader" if n == 1 else f"load-reader-{n}")
        reader.groups.add(group)
        store = import_module(settings.SESSION_ENGINE).SessionStore()
        store[SESSION_KEY] = str(reader.pk)
        # The backend a password sign-in records (the first that signs anyone in: not axes' guard).
        store[BACKEND_SESSION_KEY] = next(b for b in settings.AUTHENTICATION_BACKENDS if "Password" in b)
        store[HASH_SESSION_KEY] = reader.get_session_auth_hash()
        store.create()
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={store.session_key}")
    pools = list(Pool.objects.filter(archived=False, owner_tenant__isnull=True).order_by("slug"))
    if not pools:
        raise LoadError("no open pool to read and book: run `make seed` (or bench_scale) first")
    nodes = list(Node.objects.filter(pool__in=pools).order_by("?").values_list("name", flat=True)[:max_paths])
    tenant, _ = Tenant.objects.get_or_create(slug="load", defaults={"name": "Load benchmark"})
    Quota.objects.update_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": 1_000_000})
    writer, _ = User.objects.get_or_create(username="load-writer")
    tenant.users.add(writer)
    return Plan(
        cookies=cookies,
        paths=[f"/pools/{p.slug}/" for p in pools] + [f"/nodes/{name}/" for name in nodes],
        token=issue_token(writer, days=1).key,
        tenant=tenant.slug,
        pool=pools[0].slug,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(workers: int = 2, threads: int = 8, log_path: Path | None = None):
    """Serve Berth under gunicorn as `make run` does, on a free loopback port; yield its URL.

    gunicorn's log goes to `log_path` (else to a temporary file, shown if it does not start).
    """
    port = _free_port()
    env = {**os.environ, "DJANGO_DEBUG": "0"}
    env.setdefault("DJANGO_SECRET_KEY", settings.SECRET_KEY)
    command = [
        str(Path(sys.executable).with_name("gunicorn")), "config.wsgi", "--config", "config/gunicorn.conf.py",
        "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads), "--no-control-socket",
    ]  # fmt: skip
    # DEBUG off serves hashed static names: the manifest must exist, as `make run` makes it.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    # Its log goes to a file: a pipe nobody reads fills up and then blocks every worker that logs.
    with tempfile.TemporaryFile() if log_path is None else open(log_path, "w+b") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if server.poll() is not None:
                        log.seek(0)
                        raise LoadError(f"gunicorn did not start: {log.read().decode()[-2000:]}") from None
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=30)


class _Client:
    """A client that sends each request on a new connection, as a proxy in front of gunicorn does.

    (nginx speaks to its upstream one connection a request unless told otherwise. Kept alive, the
    40 connections of a burst all went to the worker process that woke first, which then ran at
    100 % of a core while the other idled.)
    """

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.conn: http.client.HTTPConnection | None = None

    def ask(self, method: str, path: str, headers: dict, body: bytes | None = None) -> tuple[int, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            self.conn.request(method, path, body=body, headers=headers)
            answer = self.conn.getresponse()
            status, body = answer.status, answer.read()
            self.conn.close()
            self.conn = None
            return status, body
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise


def _timed(tally: Tally, client: _Client, method: str, path: str, headers: dict, body=None, want=(200,)):
    t0 = time.perf_counter()
    try:
        status, data = client.ask(method, path, headers, body)
    except (OSError, http.client.HTTPException) as error:
        tally.failed(f"{method} {path}: {error!r}")
        return None
    tally.ms.append((time.perf_counter() - t0) * 1000)
    if status not in want:
        tally.failed(f"{method} {path}: {status} {data[:200]!r}")
        return None
    return data


def _read(url: str, p: Plan, stop: threading.Event, tally: Tally, seed: int) -> None:
    client, pick = _Client(url), random.Random(seed)
    headers = {"Cookie": p.cookies[seed % len(p.cookies)], "Host": "127.0.0.1"}
    while not stop.is_set():
        _timed(tally, client, "GET", pick.choice(p.paths), headers)


def _write(url: str, p: Plan, stop: threading.Event, tally: Tally, seed: int) -> None:
    client, pick = _Client(url), random.Random(seed)
    headers = {"Authorization": f"Token {p.token}", "Content-Type": "application/json", "Host": "127.0.0.1"}
    while not stop.is_set():
        start = timezone.now() + timedelta(days=1, minutes=pick.randrange(0, 7 * 24 * 60))
        body = {
            "tenantId": p.tenant,
            "poolId": p.pool,
            "devices": [{"class": "gpu", "count": 1}],
            "during": {
                "start": int(start.timestamp() * 1000),
                "end": int(start.timestamp() * 1000) + 3_600_000,
            },
        }
        made = _timed(
            tally, client, "POST", "/api/v1/reservations", headers, json.dumps(body).encode(), (201,)
        )
        if made is not None:
            rid = json.loads(made)["id"]
            _timed(tally, client, "POST", f"/api/v1/reservations/{rid}/release", headers, b"", (200,))


def _figures(tally: Tally, seconds: float) -> dict:
    ms = sorted(tally.ms)
    return {
        "requests": len(ms),
        "perSecond": round(len(ms) / seconds, 1),
        "p50Ms": round(_pct(ms, 50), 1) if ms else None,
        "p95Ms": round(_pct(ms, 95), 1) if ms else None,
        "maxMs": round(max(ms), 1) if ms else None,
        "errors": tally.errors,
        "why": tally.why,
    }


def run_load(readers: int, writers: int, seconds: float, url: str | None = None, people: int = 1) -> dict:
    """Run the load against `url` (or a gunicorn of its own); return figures per kind.

    The readers are `people` operators, reader i the (i mod people)-th: each operator keeps at most
    PAGE_VARIANTS_PER_READER pages in the page cache, so one operator reading every page has most
    of them drawn again, as 32 people each reading their own would not.
    """
    check_bounds(readers, writers, seconds, url, people)
    p = plan(people=people)
    with served() if url is None else _given(url) as base:
        stop = threading.Event()
        reads, writes = Tally(), Tally()
        threads = [threading.Thread(target=_read, args=(base, p, stop, reads, i)) for i in range(readers)]
        threads += [
            threading.Thread(target=_write, args=(base, p, stop, writes, -i - 1)) for i in range(writers)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(timeout=90)
        took = time.perf_counter() - t0
    return {
        "readers": readers,
        "people": people,
        "writers": writers,
        "seconds": round(took, 1),
        "reads": _figures(reads, took),
        "writes": _figures(writes, took),
        "doubleBooked": len(booking_drift()),
    }


@contextmanager
def _given(url: str):
    yield url.rstrip("/")
