"""Scale benchmark (bench_scale): every page, list and answer at a fleet's size, a year of history.

Builds `nodes` nodes of 8 GPUs across 10 pools (scale-0 … scale-9, as bench_placements builds
its pool), `history` ended one-GPU reservations over the last year (each GPU's back to back, 28
days apart) and `live` placed ones now or starting soon (one per GPU, with their quota charges), all
with set-based statements. A second run on the same database reuses what is there. Then it asks
each page and API endpoint `repeats` times, in process through Django's test client as a browser
or program would (signed in as an operator or a tenant's member), and reports server-side p50 and
p95 and the statements each answer took. Last it checks that nothing is double-booked.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import Group, User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from capacity import services
from capacity.audit import booking_drift
from capacity.conf import placer_config
from capacity.models import AnyReservation, Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.rollups import refresh_rollups
from devtools.bench.cold_page import cold_pages
from devtools.bench.placements import BENCH_QUOTA, BUILD_CHUNK, _analyze_filled, _build_nodes, _pct
from inventory.models import Node, Pool, Site, Tenant

POOLS = 10
TENANTS = 10

_HISTORY_SQL = """
WITH s AS (
  SELECT d.id AS device_id, d.node_id, n.pool_id, row_number() OVER (ORDER BY k, d.id) AS rn,
         %(start)s::timestamptz + k * interval '28 days' + (d.id %% 24) * interval '1 hour' AS lo
    FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id
    JOIN inventory_pool p ON p.id = n.pool_id AND p.slug LIKE 'scale-%%',
         generate_series(0, 12) k
   WHERE d.parent_id IS NULL
   ORDER BY k, d.id LIMIT %(count)s
), r AS (
  INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                    created_at, updated_at, released_at, pool_id, tenant_id)
  SELECT jsonb_build_object('input', '{}'::jsonb, 'scale', rn), 'released', '[]', 'regular', 'none',
         lo, lo + interval '2 days', lo, lo + interval '2 days', lo + interval '2 days', pool_id,
         (%(tenants)s::bigint[])[1 + rn %% %(tenant_count)s]
    FROM s
  RETURNING id, (request->>'scale')::bigint AS rn
), a AS (
  INSERT INTO capacity_allocation (starts_at, ends_at, resources, created_at, released_at, node_id, reservation_id)
  SELECT s.lo, s.lo + interval '2 days', '{}', s.lo, s.lo + interval '2 days', s.node_id, r.id
    FROM r JOIN s USING (rn)
  RETURNING id, reservation_id
)
INSERT INTO capacity_devicebooking (during, allocation_id, device_id)
SELECT tstzrange(s.lo, s.lo + interval '2 days'), a.id, s.device_id
  FROM a JOIN r ON r.id = a.reservation_id JOIN s USING (rn)
"""

# Live: one booking on each of the first `count` GPUs (every pool alike), some running since up to
# 11 hours ago, the rest starting within a day; each charged its GPU as the placer charges it.
_LIVE_SQL = """
WITH s AS (
  SELECT d.id AS device_id, d.node_id, n.pool_id, row_number() OVER (ORDER BY d.index, d.id) AS rn,
         %(now)s::timestamptz + ((d.id %% 36) - 12) * interval '1 hour' AS lo
    FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id
    JOIN inventory_pool p ON p.id = n.pool_id AND p.slug LIKE 'scale-%%'
   WHERE d.parent_id IS NULL
   ORDER BY d.index, d.id LIMIT %(count)s
), r AS (
  INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                    created_at, updated_at, pool_id, tenant_id)
  SELECT %(request)s::jsonb || jsonb_build_object('scaleLive', rn), 'placed', '[]', 'regular', 'none',
         lo, lo + interval '2 days', %(now)s, %(now)s, pool_id, (%(tenants)s::bigint[])[1 + rn %% %(tenant_count)s]
    FROM s
  RETURNING id, tenant_id, starts_at, ends_at, (request->>'scaleLive')::bigint AS rn
), q AS (
  INSERT INTO capacity_quotacharge (tenant_id, reservation_id, resource, amount, during)
  SELECT tenant_id, id, 'gpu', 1, tstzrange(starts_at, ends_at) FROM r
), a AS (
  INSERT INTO capacity_allocation (starts_at, ends_at, resources, created_at, node_id, reservation_id)
  SELECT s.lo, s.lo + interval '2 days', '{}', %(now)s, s.node_id, r.id
    FROM r JOIN s USING (rn)
  RETURNING id, reservation_id
)
INSERT INTO capacity_devicebooking (during, allocation_id, device_id)
SELECT tstzrange(s.lo, s.lo + interval '2 days'), a.id, s.device_id
  FROM a JOIN r ON r.id = a.reservation_id JOIN s USING (rn)
"""


def build_fleet(nodes: int, progress=None) -> list[Pool]:
    """Create pools scale-0 … scale-9 with nodes/10 nodes each (what exists is kept)."""
    site, _ = Site.objects.get_or_create(slug="scale", defaults={"name": "Scale benchmark"})
    per = max(1, nodes // POOLS)
    pools = []
    chunks = []
    for p in range(POOLS):
        slug = f"scale-{p}"
        pool, _ = Pool.objects.get_or_create(slug=slug, defaults={"name": f"Scale {p}", "site": site})
        pools.append(pool)
        existing = Node.objects.filter(pool=pool).count()
        chunks += [(pool, range(i, min(i + BUILD_CHUNK, per))) for i in range(existing, per, BUILD_CHUNK)]
    for pool, numbers in progress(chunks) if progress else chunks:
        with transaction.atomic():
            _build_nodes(pool, pool.slug, numbers)
    with transaction.atomic():
        refresh_rollups([p.pk for p in pools])
    # Fresh statistics before the set-based fill: planned on a fresh database's empty-table
    # estimates, its joins ran as nested loops over 50,000 rows a side (minutes, not seconds).
    _analyze_filled()
    for t in range(TENANTS):
        tenant, _ = Tenant.objects.get_or_create(slug=f"scale-{t}", defaults={"name": f"Scale tenant {t}"})
        Quota.objects.get_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": BENCH_QUOTA})
    return pools


def _ms(moment) -> int:
    return int(moment.timestamp() * 1000)


def fill_bookings(history: int, live: int) -> dict:
    """Write the year of ended bookings and the live ones (only what is missing); return counts and seconds."""
    tenants = list(
        Tenant.objects.filter(slug__startswith="scale-").order_by("slug").values_list("pk", flat=True)
    )
    now = timezone.now().replace(second=0, microsecond=0)
    # Live and moved to history alike (bench_history moves the year's; a second run reuses it).
    scale = AnyReservation.objects.filter(pool__slug__startswith="scale-")
    t0 = time.perf_counter()
    # (Written history carries its row number in its request; other released ones are not it.)
    if history and not scale.filter(request__has_key="scale").exists():
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                _HISTORY_SQL,
                {
                    "start": now - timedelta(days=365),
                    "count": history,
                    "tenants": tenants,
                    "tenant_count": len(tenants),
                },
            )
    _analyze_filled(["capacity_reservation", "capacity_allocation", "capacity_devicebooking"])
    history_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if live and not scale.filter(status="placed").exists():
        # A real placement's stored request, so that every reader (and the audit) reads them as placed.
        template = services.reserve(
            {
                "tenantId": "scale-0",
                "poolId": "scale-9",
                "devices": [{"class": "gpu", "count": 1}],
                # Far ahead: its booking never meets the live ones, released or not.
                "during": {
                    "start": _ms(now + timedelta(days=300)),
                    "end": _ms(now + timedelta(days=300, hours=1)),
                },
            },
            config=dataclasses.replace(placer_config(), random=None),
        ).reservation
        services.release(template.pk)
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                _LIVE_SQL,
                {
                    "now": now,
                    "count": live,
                    "request": json.dumps(template.request, cls=DjangoJSONEncoder),
                    "tenants": tenants,
                    "tenant_count": len(tenants),
                },
            )
    live_s = time.perf_counter() - t0
    # What autovacuum gives a long-lived database: fresh statistics and a visibility map, so that
    # counting a tenant's 100,000 reservations reads the index alone (97 ms before, 4 ms after).
    _analyze_filled(vacuum=True)
    return {
        "history": scale.filter(status="released").count(),
        "live": scale.filter(status="placed").count(),
        "historySeconds": round(history_s, 1),
        "liveSeconds": round(live_s, 1),
    }


@dataclasses.dataclass(frozen=True)
class Ask:
    """One endpoint: who asks, how, and what."""

    name: str
    who: str  # "ops" or "tenant"
    path: str
    body: dict | None = None


def asks(pool: str, node: str, reservation: int) -> list[Ask]:
    """Return the pages and endpoints the benchmark times."""
    want = {
        "tenantId": "scale-0",
        "poolId": pool,
        "devices": [{"class": "gpu", "count": 1}],
        "duration": "4h",
    }
    eight = {**want, "devices": [{"class": "gpu", "count": 8}]}
    return [
        Ask("poolList", "ops", "/"),
        Ask("poolPage", "ops", f"/pools/{pool}/"),
        Ask("poolPageTenant", "tenant", f"/pools/{pool}/"),
        Ask("nodePage", "ops", f"/nodes/{node}/"),
        Ask("reservationsOperator", "ops", "/reservations/"),
        Ask("reservationsTenant", "tenant", "/reservations/"),
        Ask("reservationsFiltered", "ops", f"/reservations/?pool={pool}&status=placed"),
        Ask("reservationPage", "tenant", f"/reservations/{reservation}/"),
        Ask("usagePage", "ops", "/usage/"),
        Ask("quota", "tenant", "/api/v1/tenants/scale-0/quota"),
        Ask("preview", "tenant", "/api/v1/capacity/preview", want),
        Ask("previewExplain", "tenant", "/api/v1/capacity/preview?explain=true", want),
        Ask("earliest", "tenant", "/api/v1/capacity/earliest", eight),
        Ask("apiReservationsTenant", "tenant", "/api/v1/reservations"),
        Ask("apiReservationsOperator", "ops", "/api/v1/reservations"),
        Ask("apiNodes", "ops", f"/api/v1/nodes?pool={pool}"),
        Ask("apiPools", "ops", "/api/v1/pools"),
        Ask("apiReservation", "tenant", f"/api/v1/reservations/{reservation}"),
    ]


def _clients() -> dict[str, Client]:
    ops, _ = User.objects.get_or_create(username="scale-ops")
    ops.groups.add(Group.objects.get_or_create(name="operators")[0])
    member, _ = User.objects.get_or_create(username="scale-alice")
    Tenant.objects.get(slug="scale-0").users.add(member)
    clients = {}
    for who, user in (("ops", ops), ("tenant", member)):
        client = Client()
        client.force_login(user)
        clients[who] = client
    return clients


def time_cold(clients: dict[str, Client], pool: str, times: int) -> dict:
    """Ask the pool page first in `times` new web processes (devtools/bench/cold_page.py)."""
    cookie = "; ".join(f"{k}={v.value}" for k, v in clients["ops"].cookies.items())
    runs = cold_pages(f"/pools/{pool}/", cookie, times)
    bad = [r for r in runs if r["status"] != 200]
    if bad:
        raise RuntimeError(f"poolPageCold: {bad[0]}")
    wall = sorted(r["wallMs"] for r in runs)
    return {
        "p50Ms": round(_pct(wall, 50), 1),
        "p95Ms": round(_pct(wall, 95), 1),
        "statements": round(sum(r["statements"] for r in runs) / len(runs), 1),
        "cpuMsP50": round(_pct(sorted(r["cpuMs"] for r in runs), 50), 1),
    }


def time_asks(repeats: int, progress: Callable | None = None, cold: int = 0) -> dict[str, dict]:
    """Ask each endpoint `repeats` times after one warm-up; return p50, p95 and statements per name."""
    pool = "scale-0"
    node = Node.objects.filter(pool__slug=pool).order_by("name").values_list("name", flat=True).first()
    # A live reservation of the tenant that asks (in any pool: few live ones may miss scale-0).
    reservation = (
        Reservation.objects.filter(tenant__slug="scale-0", status="placed")
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    if reservation is None:
        raise RuntimeError("no live reservation of tenant scale-0: ask for more --live")
    clients = _clients()
    figures: dict[str, dict] = {}
    items = asks(pool, node, reservation)
    for ask in progress(items) if progress else items:
        client = clients[ask.who]
        seen: list[str] = []

        def count(execute, sql, params, many, context, seen=seen):
            seen.append(sql)
            return execute(sql, params, many, context)

        def call(ask=ask, client=client):
            if ask.body is None:
                return client.get(ask.path)
            return client.post(ask.path, ask.body, content_type="application/json")

        answer = call()
        if answer.status_code != 200:
            raise RuntimeError(f"{ask.name}: {answer.status_code} {answer.content[:300]!r}")
        times = []
        with connection.execute_wrapper(count):
            for _ in range(repeats):
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        figures[ask.name] = {
            "p50Ms": round(_pct(times, 50), 1),
            "p95Ms": round(_pct(times, 95), 1),
            "statements": round(len(seen) / repeats, 1),
        }
    if cold:
        # New processes read only what is committed: the sign-in above is (bench_scale runs in autocommit).
        figures["poolPageCold"] = time_cold(clients, pool, cold)
    return figures


def run_scale(nodes: int, history: int, live: int, repeats: int, progress=None, cold: int = 0) -> dict:
    """Build (or reuse) the fleet and its bookings, time every endpoint, check for double bookings."""
    t0 = time.perf_counter()
    build_fleet(nodes, progress=progress)
    built = time.perf_counter() - t0
    filled = fill_bookings(history, live)
    endpoints = time_asks(repeats, progress=progress, cold=cold)
    doubled = booking_drift()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pg_total_relation_size('capacity_devicebooking'), pg_total_relation_size('capacity_reservation')"
        )
        bookings_bytes, reservations_bytes = cur.fetchone()
    return {
        "nodes": Node.objects.filter(pool__slug__startswith="scale-").count(),
        "history": filled["history"],
        "live": filled["live"],
        "buildSeconds": round(built, 1),
        "historySeconds": filled["historySeconds"],
        "liveSeconds": filled["liveSeconds"],
        "deviceBookingMB": round(bookings_bytes / 1e6, 1),
        "reservationMB": round(reservations_bytes / 1e6, 1),
        "doubleBooked": len(doubled),
        "endpoints": endpoints,
    }
