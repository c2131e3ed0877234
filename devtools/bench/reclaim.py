"""Reclaim latency (bench_reclaim): lent GPUs given back, timed over real HTTP against gunicorn.

Each round books an owner's two GPUs (marked Idle), lends them to spot work, and has the node's
agent long-poll its assignments (`?wait=`, with the feed's ETag) on a connection of its own. Then
the trigger, timed from the moment it is sent: the node's report showing the owner's process on a
lent GPU (`processOwners`, cause `sample`) or the owner's `POST .../reclaim` (cause `call`). Two
figures: until the trigger's answer, by which the spot reservation is preempted (checked), and
until the long-poll answers with the owner's GPUs its own alone (no `lent`). The owner is then
released for the next round. Berth runs under gunicorn as `make run` serves it, on loopback.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.utils import timezone

from capacity import services
from capacity.models import Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.models.reservations import IDLE
from capacity.rollups import refresh_rollups
from devtools.bench.load import LoadError, check_bounds, served
from devtools.bench.placements import _pct
from identity.tokens import issue_node_token, issue_token
from inventory.models import Device, Node, Pool, Site, Tenant
from policy.models import PoolPolicy

POOL, NODE, OWNER, SPOT = "bench-lend", "bench-lend-a", "bench-owner", "bench-spot"
MAX_ROUNDS = 1000
IDLE_CONDITION = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}


@dataclass
class Setup:
    """The node's and the owner's tokens."""

    node_token: str
    owner_token: str


def setup() -> Setup:
    """Make (or reuse) the pool that lends, its two-GPU node, the two tenants and the tokens."""
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    pool, _ = Pool.objects.get_or_create(slug=POOL, defaults={"name": "Bench lending", "site": site})
    PoolPolicy.objects.update_or_create(pool=pool, defaults={"lend_idle": True, "spot_notice": None})
    node, made = Node.objects.get_or_create(name=NODE, defaults={"pool": pool})
    if made:
        Device.objects.bulk_create(Device(node=node, uuid=f"GPU-{NODE}-{i}", index=i) for i in range(2))
        refresh_rollups([pool.pk])
    owner_user, _ = User.objects.get_or_create(username="bench-owner")
    for slug in (OWNER, SPOT):
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug})
        Quota.objects.update_or_create(
            tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": 1_000_000}
        )
        if slug == OWNER:
            tenant.users.add(owner_user)
    for reservation in Reservation.objects.filter(pool=pool, status__in=("placed", "pending")):
        services.release(reservation.pk)
    return Setup(issue_node_token(NODE).key, issue_token(owner_user, days=1).key)


class _Http:
    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def ask(self, method: str, path: str, token: str, body: dict | None = None, headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=90)
        sent = {"Authorization": f"Token {token}", "Host": "127.0.0.1", **(headers or {})}
        data = None
        if body is not None:
            data, sent["Content-Type"] = json.dumps(body).encode(), "application/json"
        try:
            conn.request(method, path, body=data, headers=sent)
            answer = conn.getresponse()
            return answer.status, answer.getheader("ETag"), answer.read()
        finally:
            conn.close()


def _report(client: _Http, token: str, pid: int | None, owner: int | None) -> None:
    devices = [
        {
            "uuid": f"GPU-{NODE}-{i}",
            "utilization": {"gpuPercent": 0, "processes": [{"pid": pid}] if pid and i == 1 else []},
        }
        for i in range(2)
    ]
    body = {"devices": devices, "processOwners": [{"pid": pid, "reservationId": owner}] if pid else []}
    status, _tag, raw = client.ask("POST", f"/api/v1/nodes/{NODE}/report", token, body)
    if status != 200:
        raise RuntimeError(f"report: {status} {raw[:300]!r}")


def _lend() -> tuple[int, int]:
    """Book the owner's two GPUs, mark them Idle, lend them to spot work; return (owner, work)."""
    ask = {"poolId": POOL, "devices": [{"class": "gpu", "count": 2}]}
    owner = services.reserve({**ask, "tenantId": OWNER, "duration": "1d"}).reservation
    Reservation.objects.filter(pk=owner.pk).update(conditions=[IDLE_CONDITION], updated_at=timezone.now())
    work = services.reserve({**ask, "tenantId": SPOT, "duration": "1h", "priority": "spot"}).reservation
    if owner.status != "placed" or work.status != "placed" or work.lent_from != [owner.pk]:
        raise RuntimeError(f"not lent: owner {owner.status}, work {work.status} lent from {work.lent_from}")
    return owner.pk, work.pk


def _one(client: _Http, s: Setup, cause: str, n: int, extra: list[int]) -> tuple[float, float]:
    _report(client, s.node_token, None, None)  # no process: the GPUs may be lent
    owner, work = _lend()
    status, tag, _raw = client.ask("GET", f"/api/v1/nodes/{NODE}/assignments", s.node_token)
    polled: dict = {"answers": 0}

    def poll() -> None:
        # As the agent does: long-poll with the last ETag, again after each answer, until the feed
        # shows the owner's GPUs its own alone (or a minute has gone).
        etag, deadline = tag, time.perf_counter() + 60
        while time.perf_counter() < deadline:
            status, etag_now, raw = client.ask(
                "GET",
                f"/api/v1/nodes/{NODE}/assignments?wait=30",
                s.node_token,
                headers={"If-None-Match": etag},
            )
            polled["answers"] += 1
            if status == 200 and not any(d["lent"] for d in json.loads(raw)["devices"]):
                polled["at"] = time.perf_counter()
                return
            etag = etag_now or etag

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(0.3)  # the long-poll is waiting at the server
    t0 = time.perf_counter()
    if cause == "sample":
        _report(client, s.node_token, 40_000 + n, owner)
    else:
        status, _tag, raw = client.ask("POST", f"/api/v1/reservations/{owner}/reclaim", s.owner_token)
        if status != 200:
            raise RuntimeError(f"reclaim: {status} {raw[:300]!r}")
    answered = time.perf_counter() - t0
    if Reservation.objects.get(pk=work).status != "preempted":
        raise RuntimeError(f"round {n}: the spot work is not preempted when the {cause} answered")
    waiter.join(timeout=90)
    if "at" not in polled:
        raise RuntimeError(f"round {n}: the long-poll never answered the owner's GPUs its own alone")
    extra[0] += polled["answers"] - 1
    services.release(owner)
    return answered * 1000, (polled["at"] - t0) * 1000


def run_reclaim(rounds: int = 50, url: str | None = None) -> dict:
    """Time `rounds` reclaims of each cause; return p50 and p95 in ms of both figures."""
    if not 0 < rounds <= MAX_ROUNDS:
        raise LoadError(f"rounds: from 1 to {MAX_ROUNDS}")
    if url is not None:
        check_bounds(1, 0, 1, url)  # loopback only
    s = setup()
    figures: dict = {"rounds": rounds}

    def measure(base: str) -> None:
        client = _Http(base)
        for cause in ("sample", "call"):
            preempted, assigned, extra = [], [], [0]
            for n in range(rounds):
                a, b = _one(client, s, cause, n, extra)
                preempted.append(a)
                assigned.append(b)
            preempted.sort()
            assigned.sort()
            figures[cause] = {
                "preemptedP50Ms": round(_pct(preempted, 50), 1),
                "preemptedP95Ms": round(_pct(preempted, 95), 1),
                "assignmentsP50Ms": round(_pct(assigned, 50), 1),
                "assignmentsP95Ms": round(_pct(assigned, 95), 1),
                # Long-poll answers before the one without lent GPUs (a change seen in between).
                "earlierAnswers": extra[0],
            }

    if url is not None:
        measure(url)
    else:
        with served() as base:
            measure(base)
    return figures
