"""Earliest-start benchmark (bench_placements --earliest BOOKINGS): how fast, and exact against preview."""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from datetime import timedelta

from django.test.utils import override_settings
from django.utils import timezone

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.conf import placer_config
from capacity.services.earliest_start import earliest
from devtools.bench.placements import build_pool

SHAPES = (1, 2, 4, 8)
HOURS = (4, 12, 24, 48)


def _window(start, hours: int) -> dict:
    end = start + timedelta(hours=hours)
    return {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)}


def run_earliest(nodes: int, bookings: int, queries: int, seed: int, progress=None) -> dict:
    """Book `bookings` windows in the pool's next three days, then ask `queries` earliest starts.

    Each answer is checked against preview on a sample: the request fits at the answer and not
    half an hour before it (when the answer is after the requested start).
    """
    pool = build_pool(nodes, 1, progress=progress)
    config = dataclasses.replace(placer_config(), placer="inline", random=None)
    rng = random.Random(seed)
    # Filling takes minutes: windows start from the clock at each request, never before it.
    first = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=10)
    placed = 0
    errors: list[str] = []
    with override_settings(DEBUG=False):
        while placed < bookings:
            start = max(first + timedelta(hours=rng.randrange(0, 72)), timezone.now())
            data = {
                "tenantId": "bench-0",
                "poolId": pool.slug,
                "devices": [{"class": "gpu", "count": rng.choice(SHAPES)}],
                "during": _window(start, rng.choice((2, 6, 12, 24))),
            }
            # Filling, not measured: a request that does not fit now is skipped, not made pending.
            if services.preview(data, config=config).fits:
                placed += services.reserve(data, config=config).reservation.status == "placed"
        timings, searched, later, checked = [], [], 0, 0
        for n in range(queries):
            # Asked for the busiest stretch of the three days, where most shapes must wait.
            start = max(first + timedelta(hours=rng.randrange(12, 48)), timezone.now())
            data = {
                "tenantId": "bench-0",
                "poolId": pool.slug,
                "devices": [{"class": "gpu", "count": rng.choice(SHAPES)}],
                "during": _window(start, rng.choice(HOURS)),
            }
            if n % 4 == 3:
                data["topology"] = "nvlink-all"
            started = time.perf_counter()
            answer = earliest(data, config=config)
            timings.append((time.perf_counter() - started) * 1000)
            if not answer.fits:
                continue
            if answer.window.start > data["during"]["start"]:
                later += 1
                searched.append(timings[-1])
            if n % 5 == 0:
                checked += 1
                errors.extend(_check(data, answer.window.start, config))
        gang = {**data, "devices": [{"class": "gpu", "count": 8}], "gang": {"size": 4}}
        started = time.perf_counter()
        earliest(gang, config=config)
        gang_ms = (time.perf_counter() - started) * 1000
    timings.sort()
    searched.sort()
    return {
        "nodes": nodes,
        "bookings": placed,
        "queries": queries,
        "answers_after_requested_start": later,
        "checked_against_preview": checked,
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(timings[int(len(timings) * 0.95) - 1], 1),
        # Only the answers after the requested start: these searched the horizon.
        "searched_p50_ms": round(statistics.median(searched), 1) if searched else 0.0,
        "gang_of_4x8_ms": round(gang_ms, 1),
        "double_booked": len([line for line in booking_drift() if "overlap" in line]),
        "drift": len(audit()),
        "errors": errors,
    }


def _check(data: dict, start: int, config) -> list[str]:
    length = data["during"]["end"] - data["during"]["start"]

    def fits(at: int) -> bool:
        return services.preview({**data, "during": {"start": at, "end": at + length}}, config=config).fits

    found = []
    if not fits(start):
        found.append(f"does not fit at the answer {start}: {data}")
    early = start - 30 * 60 * 1000
    if early >= data["during"]["start"] and fits(early):
        found.append(f"fits half an hour before the answer {start}: {data}")
    return found
