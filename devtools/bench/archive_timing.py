"""History benchmark (bench_history): placements on an empty fleet, after a year, and after the move.

Builds (or reuses) bench_scale's fleet, times `placements` inline one-GPU placements on it while it
holds no bookings (a first run only), fills bench_scale's year of ended bookings and live ones,
times them again, moves every booking long over to the history tables as the worker does (in its
batches, every round until none is left) and times them a third time. Each set of placements is
released afterwards. Reports the live and history tables' rows and sizes, the move's rate, and
checks that nothing is double-booked, live or moved.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from capacity import services
from capacity.archive import move_history
from capacity.audit import booking_drift
from capacity.conf import placer_config
from capacity.models import AnyReservation, Reservation
from devtools.bench.placements import _analyze_filled, _pct
from devtools.bench.scale import POOLS, TENANTS, _ms, build_fleet, fill_bookings

TABLES = (
    "capacity_devicebooking",
    "capacity_devicebookinghistory",
    "capacity_scalarclaim",
    "capacity_allocation",
    "capacity_allocationhistory",
    "capacity_reservation",
    "capacity_reservationhistory",
)


def time_placements(count: int) -> dict:
    """Place `count` one-GPU reservations across the pools, one by one (after one a pool untimed);
    release them; return figures."""
    config = placer_config()
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(days=3)
    took, made = [], []
    # The first placement in a pool builds its index (once per generation): warm each pool first.
    for i in range(-POOLS, count):
        data = {
            "tenantId": f"scale-{i % TENANTS}",
            "poolId": f"scale-{i % POOLS}",
            "devices": [{"class": "gpu", "count": 1}],
            "during": {"start": _ms(start), "end": _ms(start + timedelta(hours=1))},
        }
        t0 = time.perf_counter()
        made.append(services.reserve(data, config=config).reservation.pk)
        if i >= 0:
            took.append(time.perf_counter() - t0)
    placed = Reservation.objects.filter(pk__in=made[POOLS:], status="placed").count()
    took.sort()
    for pk in made:
        services.release(pk)
    return {
        "placements": count,
        "placed": placed,
        "perSecond": round(count / sum(took), 1),
        "p50Ms": round(_pct(took, 50) * 1000, 1),
        "p95Ms": round(_pct(took, 95) * 1000, 1),
    }


def table_sizes() -> dict[str, dict]:
    """Return rows and megabytes (with indexes) of the live and history booking tables."""
    out = {}
    with connection.cursor() as cur:
        for table in TABLES:
            cur.execute(f"SELECT count(*), pg_total_relation_size('{table}') FROM {table}")
            rows, size = cur.fetchone()
            if table.endswith("history"):  # a partitioned table's size is its partitions'
                cur.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits"
                    " WHERE inhparent = %s::regclass",
                    [table],
                )
                size = cur.fetchone()[0]
            out[table] = {"rows": rows, "MB": round(size / 1e6, 1)}
    return out


def run_history(nodes: int, history: int, live: int, placements: int, progress=None) -> dict:
    """Build, fill, move and time placements at each step; return the figures."""
    build_fleet(nodes, progress=progress)
    fresh = not AnyReservation.objects.filter(
        pool__slug__startswith="scale-", request__has_key="scale"
    ).exists()
    empty = time_placements(placements) if fresh else None
    filled = fill_bookings(history, live)
    before = time_placements(placements)
    sizes_before = table_sizes()
    t0, moved = time.perf_counter(), 0
    while True:
        step = move_history(timezone.now())
        moved += step.bookings + step.claims + step.allocations + step.reservations
        if not (step.bookings or step.claims or step.allocations or step.reservations):
            break
    move_s = time.perf_counter() - t0
    # What autovacuum does after a move: the freed room is reused by new bookings (the files keep
    # their size until a VACUUM FULL, which Berth does not run).
    _analyze_filled(
        [
            "capacity_devicebooking",
            "capacity_scalarclaim",
            "capacity_allocation",
            "capacity_reservation",
            "capacity_quotacharge",
            "capacity_devicebookinghistory",
            "capacity_allocationhistory",
            "capacity_reservationhistory",
        ],
        vacuum=True,
    )
    after = time_placements(placements)
    return {
        "nodes": nodes,
        "history": filled["history"],
        "live": filled["live"],
        "placementsEmpty": empty,
        "placementsYear": before,
        "placementsMoved": after,
        "tablesBefore": sizes_before,
        "tablesAfter": table_sizes(),
        "moved": moved,
        "moveSeconds": round(move_s, 1),
        "movedPerSecond": round(moved / move_s) if move_s else None,
        "doubleBooked": len(booking_drift()),
    }
