"""Book weekly series on a benchmark pool and time them against the same windows booked one by one,
then release one beside pending work (for bench_series)."""

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
from inventory.models import Tenant
from policy.models import PoolShare
from series.book import reserve_series
from series.release import release_series

DAYS = ("MO", "WE", "FR")
# Past 52 weeks of three days a series would pass 366 days: longer ones are booked every day.
EVERY_DAY = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
# The tenant whose own bookings wait past its borrowing limit (--pending).
WAITING = "bench-1"


def _monday(now: datetime, hour: int) -> datetime:
    today = now.astimezone(UTC).replace(hour=hour, minute=0, second=0, microsecond=0)
    return today + timedelta(days=(7 - today.weekday()) % 7 or 7)


def series_request(pool: str, start: datetime, occurrences: int, gpus: int, all_or_nothing: bool) -> dict:
    """Return a weekly series on MO, WE, FR (every day past 150) of `occurrences` windows of 4 hours
    from `start` (a Monday)."""
    end = start + timedelta(hours=4)
    days = DAYS if occurrences <= 150 else EVERY_DAY
    return {
        "tenantId": "bench-0",
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "resources": {"vcpu": 16 * gpus, "memoryGiB": 128 * gpus},
        "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
        "repeat": {"freq": "weekly", "byDay": list(days), "count": occurrences},
        **({"allOrNothing": True} if all_or_nothing else {}),
    }


def run(
    nodes: int,
    occurrences: int,
    runs: int,
    background: int,
    gpus: int,
    seed: int,
    progress=None,
    pending: int = 0,
) -> dict:
    """Build the pool, place `background` seeded requests, then book `runs` series of `occurrences`
    (timed, statements counted) and, for each, the same windows as single creates; then release
    two more series of `occurrences` beside `pending` bookings that cannot place (one timed, one
    with its statements counted)."""
    pool = build_pool(nodes, 2, progress=progress)
    for data in requests_for(seed, background, pool.slug, 1)[0]:
        services.reserve(data)
    now = timezone.now()
    series_s, single_s = [], []
    placed = missed = 0
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
        missed += sum(o.status != "placed" for o in result.occurrences)
    series_statements, single_statements = counted
    waiting = make_pending(pool, pending, _monday(now, 20))
    release_s, _ = _release(pool.slug, _monday(now, 21), occurrences, gpus)
    _, release_statements = _release(pool.slug, _monday(now, 22), occurrences, gpus, count=True)
    still = Reservation.objects.filter(pk__in=waiting, status=Reservation.Status.PENDING).count()
    total = runs * occurrences
    double = [line for line in booking_drift() if "overlap" in line]
    return {
        "nodes": nodes,
        "background_bookings": background,
        "series": runs,
        "occurrences_per_series": occurrences,
        "gpus_per_occurrence": gpus,
        "placed": placed,
        "pending": missed,
        "series_s_mean": round(sum(series_s) / runs, 3),
        "series_s_max": round(max(series_s), 3),
        "ms_per_occurrence": round(sum(series_s) * 1000 / total, 2),
        "statements_per_series": series_statements,
        "statements_per_occurrence": round(series_statements / occurrences, 2),
        "single_creates_s_mean": round(sum(single_s) / runs, 3),
        "single_ms_per_create": round(sum(single_s) * 1000 / total, 2),
        "statements_per_single_create": round(single_statements / occurrences, 2),
        "pending_beside_release": pending,
        "release_s": round(release_s, 3),
        "release_statements": release_statements,
        "release_statements_per_occurrence": round(release_statements / occurrences, 2),
        "pending_still_pending": still,
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
        result = reserve_series(body)
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


def make_pending(pool, count: int, monday: datetime) -> list[int]:
    """Book `count` requests of tenant WAITING past its borrowing limit (none) in the pool: each
    stays pending, and every retry tries it again (the tenant makes that work itself)."""
    if not count:
        return []
    tenant = Tenant.objects.get(slug=WAITING)
    PoolShare.objects.update_or_create(
        pool=pool, tenant=tenant, defaults={"guaranteed_gpus": 0, "borrowing_limit_gpus": 0}
    )
    made = []
    for n in range(count):
        start = monday + timedelta(days=n)
        during = {
            "start": int(start.timestamp() * 1000),
            "end": int((start + timedelta(hours=4)).timestamp() * 1000),
        }
        data = {
            "tenantId": WAITING,
            "poolId": pool.slug,
            "devices": [{"class": "gpu", "count": 1}],
            "during": during,
        }
        made.append(services.reserve(data).reservation.pk)
    placed = Reservation.objects.filter(pk__in=made).exclude(status=Reservation.Status.PENDING).count()
    assert not placed, f"{placed} of the pending bookings placed: the borrowing limit did not hold"
    return made


def _release(
    pool: str, monday: datetime, occurrences: int, gpus: int, count: bool = False
) -> tuple[float, int]:
    """Book a series of `occurrences`, then release it as POST /series/{id}/release does (the
    retries it leaves after its commit included); return the seconds, or with `count` the statements."""
    series = reserve_series(series_request(pool, monday, occurrences, gpus, False)).series
    statements = [0]

    def counted(execute, sql, params, many, context):
        statements[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counted) if count else nullcontext():
        t0 = time.perf_counter()
        release_series(series.pk)
        seconds = time.perf_counter() - t0
    return seconds, statements[0]
