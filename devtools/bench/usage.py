"""Usage-report benchmark (bench_usage): a month of GPU-hours at a fleet's size.

Builds bench-<nodes> as bench_placements does (8 GPUs a node) and writes, with set-based
statements, `bookings` one-GPU reservations spread over the last 30 days (each device's bookings
back to back, never overlapping: the EXCLUDE constraint holds them) across 10 tenants, and one
day of per-minute samples for `sampled` devices. Then times the usage report for the month,
grouped by tenant and pool per day, and by model per week, as the API runs it: first on raw
minutes, then again after the worker's hourly fold.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from capacity.access import EVERYONE
from devtools.bench.placements import _analyze_filled, _pct, build_pool
from inventory.models import Tenant
from usage.folds import fold_samples
from usage.report import usage_report

_FILL_SQL = """
CREATE TEMP TABLE bench_usage_slots ON COMMIT DROP AS
SELECT d.id AS device_id, d.node_id, k, row_number() OVER (ORDER BY d.id, k) AS rn,
       %(start)s::timestamptz + k * interval '58 hours' + (d.id %% 10) * interval '1 hour' AS lo
  FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id,
       generate_series(0, 11) k
 WHERE n.pool_id = %(pool)s AND d.parent_id IS NULL
 ORDER BY d.id, k LIMIT %(count)s;

INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                  created_at, updated_at, released_at, pool_id, tenant_id)
SELECT jsonb_build_object('input', '{}'::jsonb, 'bench', rn), 'released', '[]', 'regular', 'none',
       lo, lo + interval '48 hours', lo, lo, lo + interval '48 hours', %(pool)s, (%(tenants)s::bigint[])[1 + rn %% 10]
  FROM bench_usage_slots;

INSERT INTO capacity_allocation (starts_at, ends_at, resources, created_at, released_at, node_id, reservation_id)
SELECT s.lo, s.lo + interval '48 hours', '{}', s.lo, s.lo + interval '48 hours', s.node_id, r.id
  FROM bench_usage_slots s
  JOIN capacity_reservation r ON r.pool_id = %(pool)s AND (r.request->>'bench')::bigint = s.rn;

INSERT INTO capacity_devicebooking (during, allocation_id, device_id)
SELECT tstzrange(s.lo, s.lo + interval '48 hours'), a.id, s.device_id
  FROM bench_usage_slots s
  JOIN capacity_reservation r ON r.pool_id = %(pool)s AND (r.request->>'bench')::bigint = s.rn
  JOIN capacity_allocation a ON a.reservation_id = r.id;

INSERT INTO inventory_devicesample (device_id, minute, gpu_percent, memory_used_mib, processes, process_mib)
SELECT d.device_id, %(day)s::timestamptz + m * interval '1 minute', (m %% 100), 1000, 1, 1000
  FROM (SELECT DISTINCT device_id FROM bench_usage_slots ORDER BY device_id LIMIT %(sampled)s) d,
       generate_series(0, 1439) m
ON CONFLICT DO NOTHING;
"""


def run_usage(nodes: int, bookings: int, sampled: int, repeats: int, progress=None) -> dict:
    """Fill a month of bookings and a day of samples, then time the report."""
    pool = build_pool(nodes, 10, progress=progress)
    tenants = list(
        Tenant.objects.filter(slug__startswith="bench-").order_by("pk").values_list("pk", flat=True)[:10]
    )
    end = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=30)
    t0 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            _FILL_SQL,
            {"pool": pool.pk, "count": bookings, "start": start, "tenants": tenants, "sampled": sampled,
             "day": start + timedelta(days=1)},
        )  # fmt: skip
    _analyze_filled(
        ["capacity_reservation", "capacity_allocation", "capacity_devicebooking", "inventory_devicesample"]
    )
    filled = time.perf_counter() - t0
    figures: dict = {
        "nodes": nodes,
        "bookings": bookings,
        "sampledDeviceDays": sampled,
        "fillSeconds": round(filled, 1),
    }
    figures["raw"] = _time_reports(start, end, repeats)
    # The worker's fold, as many rounds as the month needs (a day of hours a round), then the same
    # reports on hourly rows (the sampled day is older than USAGE_RAW_DAYS: its raw minutes go).
    t0 = time.perf_counter()
    rounds = hourly = pruned = 0
    while (folded := fold_samples(end + timedelta(minutes=5))).hours:
        rounds, hourly, pruned = rounds + 1, hourly + folded.rows, pruned + folded.raw_pruned
    _analyze_filled(["inventory_devicesamplehour", "inventory_devicesample"])
    figures["fold"] = {
        "rounds": rounds,
        "hourlyRows": hourly,
        "rawPruned": pruned,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    figures["folded"] = _time_reports(start, end, repeats)
    return figures


def _time_reports(start, end, repeats: int) -> dict:
    """Time the month's report by tenant and pool per day, and by model per week."""
    figures: dict = {}
    for name, group_by, bucket in (
        ("tenantPoolDay", ["tenant", "pool"], "day"),
        ("modelWeek", ["model"], "week"),
    ):
        # Whole UTC days, the last included, as every report reads a period.
        first, last = start.date(), end.date()
        usage_report(first, last, group_by, bucket, EVERYONE)  # warm
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            rows = usage_report(first, last, group_by, bucket, EVERYONE)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        figures[name] = {
            "rows": len(rows),
            "gpuHoursBooked": round(sum(r.booked for r in rows), 1),
            "gpuHoursBookedAhead": round(sum(r.ahead for r in rows), 1),
            "gpuHoursUsed": round(sum(r.used for r in rows), 1),
            "p50Ms": round(_pct(times, 50), 1),
            "p95Ms": round(_pct(times, 95), 1),
        }
    return figures
