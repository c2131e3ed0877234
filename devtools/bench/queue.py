"""Fair-queue benchmark (bench_queue): what ordering a pool's pending work costs a worker round.

Builds pool bench-queue with `nodes` 8-GPU nodes and `tenants` tenants, all but the last two with a
share (the pool's GPUs split evenly), then, with set-based statements, `history_days` of past
one-day bookings on every GPU (released: what the fair shares decay over, ten half-lives by
default) and `pending` pending reservations spread over the tenants. Then it times, `repeats`
times each, with shares on and off (off: the pool's share rows removed in a transaction rolled
back after), what a worker round spends on the order:

- the fair shares of every pool with shares (one statement a round; off: the same, finding none);
- the retry's order of the pool's pending work (the first 50, as the worker's round asks);
- the pool-lease batch's claim of 64 queued reservations (the same rows made queued), rolled back;
- `queue` places for a list page of 50 pending reservations and for one;
- the pure order (policy.fair_order.fair_order) of every pending row in Python.

Prints p50 and p95 in ms and statements for each, and the round's total.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity.models import Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.placers.batch import _CLAIM_SQL, ordered_claim_sql
from capacity.rollups import refresh_rollups
from capacity.services.release import PENDING_RETRY_BATCH, _round_robin
from devtools.bench.placements import BUILD_CHUNK, _analyze_filled, _build_nodes, _pct
from inventory.models import Node, Pool, Site, Tenant
from policy.fair_order import Waiting, fair_order
from policy.fair_queue import POOL_ORDER, half_life, pool_params, queue_places, read_fair_shares, retry_order
from policy.models import PoolShare

SLUG = "bench-queue"
BATCH = 64

# One released one-day booking per GPU per day over the last `days` days.
_HISTORY_SQL = """
WITH s AS (
  SELECT d.id AS device_id, d.node_id, row_number() OVER (ORDER BY k, d.id) AS rn,
         %(now)s::timestamptz - (k + 1) * interval '1 day' AS lo
    FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id AND n.pool_id = %(pool)s,
         generate_series(0, %(days)s - 1) k
   WHERE d.parent_id IS NULL
), r AS (
  INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                    created_at, updated_at, released_at, pool_id, tenant_id)
  SELECT jsonb_build_object('input', '{}'::jsonb, 'benchQueue', rn), 'released', '[]', 'regular', 'none',
         lo, lo + interval '1 day', lo, lo + interval '1 day', lo + interval '1 day', %(pool)s,
         (%(tenants)s::bigint[])[1 + (rn * 7) %% %(tenant_count)s]
    FROM s
  RETURNING id, (request->>'benchQueue')::bigint AS rn
), a AS (
  INSERT INTO capacity_allocation (starts_at, ends_at, resources, created_at, released_at, node_id, reservation_id)
  SELECT s.lo, s.lo + interval '1 day', '{}', s.lo, s.lo + interval '1 day', s.node_id, r.id
    FROM r JOIN s USING (rn)
  RETURNING id, reservation_id
)
INSERT INTO capacity_devicebooking (during, allocation_id, device_id)
SELECT tstzrange(s.lo, s.lo + interval '1 day'), a.id, s.device_id
  FROM a JOIN r ON r.id = a.reservation_id JOIN s USING (rn)
"""

# Pending work: a GPU for a day from tomorrow, asked over the last hours, tenants in turn.
_PENDING_SQL = """
INSERT INTO capacity_reservation (request, status, conditions, priority, binding, starts_at, ends_at,
                                  created_at, updated_at, pool_id, tenant_id)
SELECT '{"input": {}}'::jsonb, 'pending',
       '[{"type": "Unschedulable", "status": "True", "reason": "NoFit", "message": "bench"}]'::jsonb,
       'regular', 'none', %(now)s::timestamptz + interval '1 day', %(now)s::timestamptz + interval '2 days',
       %(now)s::timestamptz - i * interval '1 second', %(now)s, %(pool)s,
       (%(tenants)s::bigint[])[1 + (i * 13) %% %(tenant_count)s]
  FROM generate_series(1, %(count)s) i
"""

_QUEUED = """UPDATE capacity_reservation SET conditions = '[{"type": "Queued", "status": "True",
  "reason": "PoolLease", "message": "queued for the pool''s placer"}]'::jsonb
 WHERE pool_id = %(pool)s AND status = 'pending'"""


def build(nodes: int, tenants: int, history_days: int, pending: int, now: datetime) -> Pool:
    """Create (or reset) pool bench-queue: nodes, tenants with shares, history and pending work."""
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    pool, _ = Pool.objects.get_or_create(slug=SLUG, defaults={"name": "Benchmark queue", "site": site})
    people = []
    for i in range(tenants):
        tenant, _ = Tenant.objects.get_or_create(slug=f"{SLUG}-{i}", defaults={"name": f"Queue tenant {i}"})
        Quota.objects.get_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": 10**9})
        people.append(tenant)
    with transaction.atomic(), connection.cursor() as cur:
        for table, column in (
            (
                "capacity_devicebooking",
                "allocation_id IN (SELECT id FROM capacity_allocation a WHERE a.reservation_id IN (SELECT id FROM capacity_reservation WHERE pool_id = %(pool)s))",
            ),
            (
                "capacity_allocation",
                "reservation_id IN (SELECT id FROM capacity_reservation WHERE pool_id = %(pool)s)",
            ),
            (
                "capacity_reservationevent",
                "reservation_id IN (SELECT id FROM capacity_reservation WHERE pool_id = %(pool)s)",
            ),
            ("capacity_reservation", "pool_id = %(pool)s"),
        ):
            cur.execute(f"DELETE FROM {table} WHERE {column}", {"pool": pool.pk})
        PoolShare.objects.filter(pool=pool).delete()
    existing = Node.objects.filter(pool=pool).count()
    for at in range(existing, nodes, BUILD_CHUNK):
        with transaction.atomic():
            _build_nodes(pool, SLUG, range(at, min(at + BUILD_CHUNK, nodes)))
    with transaction.atomic():
        refresh_rollups([pool.pk])
    each = nodes * 8 // tenants
    PoolShare.objects.bulk_create(PoolShare(pool=pool, tenant=t, guaranteed_gpus=each) for t in people[:-2])
    params = {
        "pool": pool.pk,
        "now": now,
        "days": history_days,
        "count": pending,
        "tenants": [t.pk for t in people],
        "tenant_count": tenants,
    }
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(_HISTORY_SQL, params)
        cur.execute(_PENDING_SQL, params)
    _analyze_filled(["capacity_devicebooking", "capacity_allocation", "capacity_reservation"])
    return pool


def _timed(repeats: int, call: Callable[[], object]) -> dict:
    times, statements = [], 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as seen:
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        statements = len(seen)
    times.sort()
    return {"p50Ms": round(_pct(times, 50), 2), "p95Ms": round(_pct(times, 95), 2), "statements": statements}


def _claim(sql: str, pool: Pool, shares) -> Callable[[], object]:
    def run() -> None:
        params = {"class": 1, "pool": pool.pk, "limit": BATCH}
        if shares is not None:
            params |= pool_params(shares)
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, params)
            assert len(cur.fetchall()) == BATCH
            transaction.set_rollback(True)

    return run


def _measure(pool: Pool, now: datetime, repeats: int, *, shares_on: bool) -> dict:
    fair = read_fair_shares(None, now)
    assert (pool.pk in fair) == shares_on
    shares = fair.get(pool.pk)
    waiting = list(Reservation.objects.filter(pool=pool, status="pending").order_by("-pk"))
    figures = {
        "fairShares": _timed(repeats, lambda: read_fair_shares(None, now)),
        "retryOrder": _timed(
            repeats,
            (lambda: retry_order([pool.pk], fair, now, PENDING_RETRY_BATCH))
            if shares_on
            else (lambda: _round_robin([pool.pk], now, PENDING_RETRY_BATCH)),
        ),
        "placesOf50": _timed(repeats, lambda: queue_places(waiting[:50], now)),
        "placesOf1": _timed(repeats, lambda: queue_places(waiting[:1], now)),
    }
    rows = [Waiting(r.pk, r.tenant_id, r.created_at) for r in waiting]
    figures["pureOrder"] = _timed(repeats, lambda: fair_order(rows, shares or {}))
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(_QUEUED, {"pool": pool.pk})
            cur.execute("ANALYZE capacity_reservation")  # as a long-lived queue's statistics would have it
        figures["batchClaim"] = _timed(
            repeats, _claim(ordered_claim_sql(POOL_ORDER) if shares_on else _CLAIM_SQL, pool, shares)
        )
        transaction.set_rollback(True)
    batches = math.ceil(len(waiting) / BATCH)
    figures["round"] = {
        "housekeepingMs": round(figures["fairShares"]["p50Ms"] + figures["retryOrder"]["p50Ms"], 2),
        "claimsOfTheWholeQueueMs": round(batches * figures["batchClaim"]["p50Ms"], 1),
        "batches": batches,
    }
    return figures


def run_queue(
    nodes: int, tenants: int, history_days: int, pending: int, repeats: int, *, keep: bool = False
) -> dict:
    """Build (unless `keep`) and measure with shares on, then off; return the figures."""
    now = timezone.now()
    pool = Pool.objects.filter(slug=SLUG).first() if keep else None
    built = time.perf_counter()
    if pool is None:
        pool = build(nodes, tenants, history_days, pending, now)
    built = round(time.perf_counter() - built, 1)
    on = _measure(pool, now, repeats, shares_on=True)
    with transaction.atomic():
        PoolShare.objects.filter(pool=pool).delete()
        off = _measure(pool, now, repeats, shares_on=False)
        transaction.set_rollback(True)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM capacity_devicebooking b JOIN capacity_allocation a ON a.id = b.allocation_id"
            " JOIN capacity_reservation r ON r.id = a.reservation_id WHERE r.pool_id = %s",
            [pool.pk],
        )
        (bookings,) = cur.fetchone()
    return {
        "pool": SLUG,
        "nodes": nodes,
        "gpus": Node.objects.filter(pool=pool).count() * 8,
        "tenants": tenants,
        "tenantsWithShares": PoolShare.objects.filter(pool=pool).count(),
        "bookingsRead": bookings,
        "halfLifeHours": half_life() / 3600,
        "pending": Reservation.objects.filter(pool=pool, status="pending").count(),
        "buildSeconds": built,
        "sharesOn": on,
        "sharesOff": off,
    }
