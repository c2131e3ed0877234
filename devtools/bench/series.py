"""Book weekly series on a benchmark pool and time them against the same windows booked one by one
(for bench_series)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta

from django.db import connection, reset_queries
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.models import Reservation
from devtools.bench.placements import build_pool, requests_for

DAYS = ("MO", "WE", "FR")


def _monday(now: datetime, hour: int) -> datetime:
    today = now.astimezone(UTC).replace(hour=hour, minute=0, second=0, microsecond=0)
    return today + timedelta(days=(7 - today.weekday()) % 7 or 7)


def series_request(pool: str, start: datetime, occurrences: int, gpus: int, all_or_nothing: bool) -> dict:
    """Return a weekly series on MO, WE, FR of `occurrences` windows of 4 hours from `start` (a Monday)."""
    end = start + timedelta(hours=4)
    return {
        "tenantId": "bench-0",
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "resources": {"vcpu": 16 * gpus, "memoryGiB": 128 * gpus},
        "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
        "repeat": {"freq": "weekly", "byDay": list(DAYS), "count": occurrences},
        **({"allOrNothing": True} if all_or_nothing else {}),
    }


def run(
    nodes: int, occurrences: int, runs: int, background: int, gpus: int, seed: int, progress=None
) -> dict:
    """Build the pool, place `background` seeded requests, then book `runs` series of `occurrences`
    (timed, statements counted) and, for each, the same windows as single creates."""
    pool = build_pool(nodes, 1, progress=progress)
    for data in requests_for(seed, background, pool.slug, 1)[0]:
        services.reserve(data)
    now = timezone.now()
    series_s, single_s = [], []
    placed = pending = 0
    # Statements counted on a run of their own (the statement log slows what it records), then
    # `runs` timed runs; each run its own hour of the day, every other one all-or-nothing.
    counted = _book(pool.slug, _monday(now, 1), occurrences, gpus, False, count=True)
    for n in range(runs):
        seconds, single_seconds, result = _book(
            pool.slug, _monday(now, 2 + n % 18), occurrences, gpus, n % 2 == 1
        )
        series_s.append(seconds)
        single_s.append(single_seconds)
        placed += sum(o.status == "placed" for o in result.occurrences)
        pending += sum(o.status != "placed" for o in result.occurrences)
    series_statements, single_statements = counted
    total = runs * occurrences
    double = [line for line in booking_drift() if "overlap" in line]
    return {
        "nodes": nodes,
        "background_bookings": background,
        "series": runs,
        "occurrences_per_series": occurrences,
        "gpus_per_occurrence": gpus,
        "placed": placed,
        "pending": pending,
        "series_s_mean": round(sum(series_s) / runs, 3),
        "series_s_max": round(max(series_s), 3),
        "ms_per_occurrence": round(sum(series_s) * 1000 / total, 2),
        "statements_per_series": series_statements,
        "statements_per_occurrence": round(series_statements / occurrences, 2),
        "single_creates_s_mean": round(sum(single_s) / runs, 3),
        "single_ms_per_create": round(sum(single_s) * 1000 / total, 2),
        "statements_per_single_create": round(single_statements / occurrences, 2),
        "reservations_in_pool": Reservation.objects.filter(pool__slug=pool.slug).count(),
        "double_booked": len(double),
        "drift": len(audit()),
        "errors": [],
    }


def _book(
    pool: str, monday: datetime, occurrences: int, gpus: int, all_or_nothing: bool, count: bool = False
):
    """Book a series, then its windows as single creates (20 hours later, not to compete with it).

    Return the seconds of each and the series' result; with `count`, the statements of each instead.
    """
    body = series_request(pool, monday, occurrences, gpus, all_or_nothing)
    single = {k: v for k, v in body.items() if k not in ("repeat", "allOrNothing")}
    reset_queries()  # the log keeps 9,000 statements: counted from empty each time
    with CaptureQueriesContext(connection) if count else nullcontext() as queries:
        t0 = time.perf_counter()
        result = services.reserve_series(body)
        series_s = time.perf_counter() - t0
    series_statements = len(queries.captured_queries) if count else 0
    reset_queries()
    with CaptureQueriesContext(connection) if count else nullcontext() as queries:
        t0 = time.perf_counter()
        for o in result.occurrences:
            start = int((o.start + timedelta(hours=20)).timestamp() * 1000)
            services.reserve({**single, "during": {"start": start, "end": start + 4 * 3_600_000}})
        single_s = time.perf_counter() - t0
    if count:
        return series_statements, len(queries.captured_queries)
    return series_s, single_s, result
