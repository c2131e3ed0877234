"""Idle-check benchmark (bench_idle): the worker's idle check over many running reservations.

Builds bench-<nodes> as bench_placements does (8 GPUs a node), then writes, with a few set-based
statements, `reservations` running one-GPU reservations (started three hours ago, ending in a
day) and two hours of per-minute samples for each GPU: one in ten at 1 % (idle), the rest at
60 %. Then times `mark_idle` `rounds` times: the first round marks the idle tenth, the later ones
find nothing new (the steady state of a worker's housekeeping).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from devtools.bench.placements import _analyze_filled, _pct, build_pool
from inventory.models import Tenant
from policy.models import PoolPolicy
from policy.pool_policy import set_policy
from policy.reclaim import reclaim_lapsed
from policy.reclaim_processes import reclaim_for_processes
from usage.idle import IDLE, mark_idle

_FILL_SQL = """
CREATE TEMP TABLE bench_idle_devices ON COMMIT DROP AS
SELECT d.id AS device_id, d.node_id, row_number() OVER (ORDER BY d.id) AS rn
  FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id
 WHERE n.pool_id = %(pool)s AND d.parent_id IS NULL
 ORDER BY d.id LIMIT %(count)s;

INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                  created_at, updated_at, pool_id, tenant_id)
SELECT jsonb_build_object('input', '{}'::jsonb, 'bench', rn), 'placed', '[]', 'regular', 'none',
       %(start)s, %(end)s, %(start)s, %(start)s, %(pool)s, %(tenant)s
  FROM bench_idle_devices;

INSERT INTO capacity_allocation (starts_at, ends_at, resources, created_at, node_id, reservation_id)
SELECT %(start)s, %(end)s, '{}', %(start)s, t.node_id, r.id
  FROM bench_idle_devices t
  JOIN capacity_reservation r ON r.pool_id = %(pool)s AND (r.request->>'bench')::bigint = t.rn;

INSERT INTO capacity_devicebooking (during, allocation_id, device_id)
SELECT tstzrange(%(start)s, %(end)s), a.id, t.device_id
  FROM bench_idle_devices t
  JOIN capacity_reservation r ON r.pool_id = %(pool)s AND (r.request->>'bench')::bigint = t.rn
  JOIN capacity_allocation a ON a.reservation_id = r.id;

DELETE FROM inventory_devicesample WHERE device_id IN (SELECT device_id FROM bench_idle_devices);
INSERT INTO inventory_devicesample (device_id, minute, gpu_percent, memory_used_mib, processes, process_mib)
SELECT t.device_id, %(minute)s - m * interval '1 minute', CASE WHEN t.rn %% 10 = 0 THEN 1 ELSE 60 END,
       1000, 1, 1000
  FROM bench_idle_devices t, generate_series(1, 125) m;
"""


def _lending_rounds(pool, lent: int, rounds: int) -> dict:
    """Lend `lent` idle GPUs to spot work, then time the worker's lending checks `rounds` times."""
    PoolPolicy.objects.update_or_create(pool=pool, defaults={"lend_idle": True})
    now = timezone.now()
    with connection.cursor() as cur:  # the idle tenth's GPUs run nothing now: they may be lent
        cur.execute(
            """UPDATE inventory_devicesample x SET processes = 0, process_mib = 0, process_owners = '{}'
                WHERE x.minute > %s AND x.gpu_percent = 1 AND x.device_id IN (
                      SELECT d.id FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id
                       WHERE n.pool_id = %s)""",
            [now - timedelta(minutes=2), pool.pk],
        )
    config = dataclasses.replace(placer_config(), random=None)
    ask = {"tenantId": "bench-0", "poolId": pool.slug, "devices": [{"class": "gpu", "count": 1}]}
    placed = sum(
        services.reserve({**ask, "duration": "1h", "priority": "spot"}, config=config).reservation.status
        == "placed"
        for _ in range(lent)
    )
    timings = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        reclaim_for_processes()
        reclaim_lapsed()
        timings.append((time.perf_counter() - t0) * 1000)
    timings.sort()
    return {
        "lentSpotWork": placed,
        "lendingChecksP50Ms": round(_pct(timings, 50), 1),
        "lendingChecksP95Ms": round(_pct(timings, 95), 1),
    }


def run_idle(reservations: int, rounds: int, progress=None, pool_policy: bool = False, lent: int = 0) -> dict:
    """Fill the pool with running reservations and samples, then time the idle check.

    With `lent`, the pool then lends: that many one-GPU spot requests are placed on idle GPUs (their
    owners' latest samples showing no process), and the worker's two lending checks are timed.

    With `pool_policy` the pool gets a policy of its own (idleWarnAfter 2h, as the site's): the
    check then asks about it apart from the pools on the site's settings (docs/policy.md).
    """
    pool = build_pool(math.ceil(reservations / 8), 1, progress=progress)
    if pool_policy:
        set_policy(pool.slug, {"idle_warn_after": timedelta(hours=2), "idle_release_after": None})
    tenant = Tenant.objects.get(slug="bench-0")
    now = timezone.now()
    built = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            _FILL_SQL,
            {
                "pool": pool.pk,
                "count": reservations,
                "start": now - timedelta(hours=3),
                "end": now + timedelta(days=1),
                "tenant": tenant.pk,
                "minute": now.replace(second=0, microsecond=0),
            },
        )
    _analyze_filled(
        ["capacity_reservation", "capacity_allocation", "capacity_devicebooking", "inventory_devicesample"]
    )
    filled_s = time.perf_counter() - built
    timings = []
    marks = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        marks.append(mark_idle(timezone.now()))
        timings.append((time.perf_counter() - t0) * 1000)
    idle = Reservation.objects.filter(
        pool=pool, status="placed", conditions__contains=[{"type": IDLE}]
    ).count()
    steady = sorted(timings[1:]) or timings
    lending = _lending_rounds(pool, lent, rounds) if lent else {}
    return {
        **lending,
        "runningReservations": reservations,
        "poolPolicy": pool_policy,
        "samples": reservations * 125,
        "fillSeconds": round(filled_s, 1),
        "firstRoundMs": round(timings[0], 1),
        "firstRoundMarked": marks[0][0],
        "steadyP50Ms": round(_pct(steady, 50), 1),
        "steadyP95Ms": round(_pct(steady, 95), 1),
        "steadyMeanMs": round(statistics.fmean(steady), 1),
        "idleNow": idle,
        "expectedIdle": reservations // 10,
    }
