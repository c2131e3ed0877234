"""Another tenant's reads while one tenant's creates wait on a slow outside check (bench_outside_check).

Berth runs under gunicorn as `make run` serves it (2 processes of 8 threads, DEBUG off). Pool
`oc-checked` asks an outside check on 127.0.0.1 that answers 204 after `delay` seconds; pool
`oc-other` asks none. For each N of `creates`, N clients of tenant `oc-busy` create one-GPU bookings
in `oc-checked` back to back (each with an idempotency key; a 429 is retried with the same key after
its Retry-After), while `readers` clients of tenant `oc-calm` read its pool page, its reservations
page and three API answers in `oc-other`. Every answer is timed from the client's side, each on a
connection of its own. Last it checks that no key booked twice and nothing is double-booked.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import uuid
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from capacity.audit import booking_drift
from capacity.models import Allocation, DeviceBooking, Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.rollups import refresh_rollups
from capacity.services import lookups
from devtools.bench.load import Tally, _Client, _figures, _timed, served
from devtools.bench.placements import _build_nodes
from devtools.bench.policy_check import _server
from identity.tokens import issue_token
from inventory.models import Node, Pool, Site, Tenant
from policy.models import PoolPolicy
from policy.pool_policy import set_policy

CHECKED, OTHER = "oc-checked", "oc-other"
BUSY, CALM = "oc-busy", "oc-calm"
NODES = 8  # per pool, 8 GPUs each
MAX_CREATES = 64
MAX_SECONDS = 60


def _pool(slug: str) -> Pool:
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    pool, _ = Pool.objects.get_or_create(slug=slug, defaults={"name": slug, "site": site})
    with transaction.atomic():
        reservations = Reservation.objects.filter(pool=pool)
        DeviceBooking.objects.filter(allocation__node__pool=pool).delete()
        Allocation.objects.filter(node__pool=pool).delete()
        Allocation.objects.filter(reservation__in=reservations).delete()
        reservations.delete()
        if not Node.objects.filter(pool=pool).exists():
            _build_nodes(pool, slug, range(NODES))
        refresh_rollups([pool.pk])
    return pool


def _member(username: str, tenant_slug: str) -> tuple[User, Tenant]:
    tenant, _ = Tenant.objects.get_or_create(slug=tenant_slug, defaults={"name": tenant_slug})
    Quota.objects.update_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": 1_000_000})
    user, _ = User.objects.get_or_create(username=username)
    tenant.users.add(user)
    return user, tenant


def _session(user: User) -> str:
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = next(b for b in settings.AUTHENTICATION_BACKENDS if "Password" in b)
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


def _read(base: str, cookie: str, token: str, stop: threading.Event, tally: Tally, seed: int) -> None:
    client, pick = _Client(base), random.Random(seed)
    pages = {"Cookie": cookie, "Host": "127.0.0.1"}
    api = {"Authorization": f"Token {token}", "Host": "127.0.0.1"}
    asks = [
        (f"/pools/{OTHER}/", pages),
        ("/reservations/", pages),
        (f"/api/v1/pools/{OTHER}", api),
        (f"/api/v1/reservations?poolId={OTHER}", api),
        ("/api/v1/pools", api),
    ]
    while not stop.is_set():
        path, headers = pick.choice(asks)
        _timed(tally, client, "GET", path, headers)


class Creates:
    """What the busy tenant's clients saw: answers by status, keys that booked, longest answer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status: dict[int, int] = {}
        self.booked: set[str] = set()
        self.slowest_refusal_ms = 0.0
        self.retry_after: set[str] = set()
        self.why: list[str] = []


def _post(client: _Client, headers: dict, body: bytes) -> tuple[int, bytes, str | None]:
    """POST a create on a new connection; return its status, body and Retry-After."""
    conn = http.client.HTTPConnection(client.host, client.port, timeout=60)
    try:
        conn.request("POST", "/api/v1/reservations", body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read(), answer.getheader("Retry-After")
    finally:
        conn.close()


def _create(base: str, token: str, stop: threading.Event, seen: Creates, seed: int) -> None:
    client, pick = _Client(base), random.Random(seed)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Host": "127.0.0.1"}
    key = body = None
    while not stop.is_set():
        if key is None:
            key = f"oc-{uuid.uuid4().hex}"
            start = timezone.now() + timedelta(days=1, minutes=pick.randrange(0, 300 * 24 * 60))
            start_ms = int(start.timestamp() * 1000)
            body = {
                "tenantId": BUSY,
                "poolId": CHECKED,
                "devices": [{"class": "gpu", "count": 1}],
                "during": {"start": start_ms, "end": start_ms + 3_600_000},
                "idempotencyKey": key,
            }
        t0 = time.perf_counter()
        try:
            status, data, after = _post(client, headers, json.dumps(body).encode())
        except (OSError, http.client.HTTPException) as error:
            status, data, after = 0, repr(error).encode(), "1"
        took = (time.perf_counter() - t0) * 1000
        with seen.lock:
            seen.status[status] = seen.status.get(status, 0) + 1
            if status in (200, 201):
                seen.booked.add(key)
            elif status in (429, 503):
                seen.slowest_refusal_ms = max(seen.slowest_refusal_ms, took)
                seen.retry_after.add(str(after))
            elif len(seen.why) < 5:
                seen.why.append(f"{status} {data[:200]!r}")
        if status in (0, 429, 503):
            # The same key again after Retry-After: the same request, never a second booking.
            stop.wait(float(after or 2))
            continue
        key = None


def _phase(base, cookie, calm_token, busy_token, readers: int, creates: int, seconds: float) -> dict:
    stop = threading.Event()
    reads, seen = Tally(), Creates()
    makers = [
        threading.Thread(target=_create, args=(base, busy_token, stop, seen, i)) for i in range(creates)
    ]
    for t in makers:
        t.start()
    if creates:
        time.sleep(2.5)  # the creates fill whatever they may hold first
    readers_ = [
        threading.Thread(target=_read, args=(base, cookie, calm_token, stop, reads, 1000 + i))
        for i in range(readers)
    ]
    t0 = time.perf_counter()
    for t in readers_:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in readers_ + makers:
        t.join(timeout=60)
    figures = _figures(reads, time.perf_counter() - t0)
    figures["creates"] = {
        "clients": creates,
        "answers": dict(sorted(seen.status.items())),
        "booked": len(seen.booked),
        "slowestRefusalMs": round(seen.slowest_refusal_ms, 1),
        "retryAfter": sorted(seen.retry_after),
        "why": seen.why,
    }
    return figures


def run_outside_check(creates: list[int], readers: int, seconds: float, delay: float) -> dict:
    """Run a phase per N of `creates` against a gunicorn of its own; return the figures per N."""
    if any(not 0 <= n <= MAX_CREATES for n in creates) or not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"creates: 0 to {MAX_CREATES} each; seconds: more than 0, at most {MAX_SECONDS}")
    os.environ["BERTH_WEBHOOKS_ALLOW_PRIVATE"] = "1"  # the check listens on 127.0.0.1 (gunicorn inherits it)
    checked, _other = _pool(CHECKED), _pool(OTHER)
    busy, _ = _member("oc-busy-user", BUSY)
    calm, _ = _member("oc-calm-user", CALM)
    check = _server(delay * 1000)
    url = f"http://127.0.0.1:{check.server_address[1]}/check"
    PoolPolicy.objects.filter(pool=checked).delete()
    set_policy(CHECKED, {"policy_webhook": url, "policy_webhook_on_error": "deny"})
    lookups.forget_all()
    cookie, calm_token, busy_token = (
        _session(calm),
        issue_token(calm, days=1).key,
        issue_token(busy, days=1).key,
    )
    out: dict = {"delay_s": delay, "readers": readers, "seconds": seconds, "phases": {}}
    try:
        with served() as base:
            _Client(base).ask("GET", "/api/v1/pools", {"Authorization": f"Token {calm_token}"})  # warm
            for n in creates:
                out["phases"][n] = _phase(base, cookie, calm_token, busy_token, readers, n, seconds)
    finally:
        check.shutdown()
        check.server_close()
        PoolPolicy.objects.filter(pool=checked).delete()
    twice = (
        Reservation.objects.filter(pool=checked)
        .exclude(idempotency_key=None)
        .values("idempotency_key")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    out["keysBookedTwice"] = twice
    out["doubleBooked"] = len(booking_drift())
    return out
