"""Availability benchmark (bench_availability): the pool page's chart on a large, booked pool.

Builds bench-<nodes> as bench_placements does, books `count` seeded requests of 1/2/4/8 GPUs
within two weeks through the services, then times the chart's read (service), the chart built
for the page, and the whole pool page, with the queries each takes.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import DeviceBooking, Reservation
from capacity.services.pool_availability import pool_availability
from capacity.views.availability_chart import pool_charts
from devtools.bench.placements import SIZE_WEIGHTS, SIZES, _pct, build_pool
from inventory.models import Pool, Tenant

BENCH_USER = "bench-availability"


def _ask(rng: random.Random, pool: str) -> dict:
    """Return a request as bench_placements asks them, its window starting from the real now.

    Starts are drawn as each request is made: ten thousand bookings take longer than the five
    minutes a start may lie in the past.
    """
    gpus = rng.choices(SIZES, SIZE_WEIGHTS)[0]
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1, hours=rng.randrange(0, 14 * 24))
    end = start + timedelta(hours=rng.choice((4, 12, 24, 48, 72)))
    return {
        "tenantId": "bench-0",
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "resources": {"vcpu": 16 * gpus, "memoryGiB": 128 * gpus},
        "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
    }


def _timed(repeats: int, call) -> tuple[list[float], list[float], int]:
    """Return the wall and this process's CPU milliseconds of each call after a warm-up, and its queries.

    CPU time leaves out the database's share and the waits of a machine shared with other work.
    """
    call()
    times, cpu = [], []
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            t0, c0 = time.perf_counter(), time.process_time()
            call()
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    times.sort()
    cpu.sort()
    return times, cpu, len(captured)


def _figures(times: list[float], cpu: list[float], queries: int) -> dict:
    return {
        "p50_ms": round(_pct(times, 50), 1),
        "p95_ms": round(_pct(times, 95), 1),
        "mean_ms": round(statistics.fmean(times), 1),
        "cpu_p50_ms": round(_pct(cpu, 50), 1),
        "queries": queries,
    }


def run_availability(
    nodes: int, count: int, seed: int, repeats: int, progress=None, keep: bool = False
) -> dict:
    """Book the pool, then time the availability read, the chart and the pool page; return figures.

    With `keep`, measure the pool as the last run left it (bookings included) without booking.
    """
    pool = Pool.objects.filter(slug=f"bench-{nodes}").first() if keep else None
    placed = 0
    started = time.perf_counter()
    if pool is None:
        pool = build_pool(nodes, 1, progress=progress)
        config = dataclasses.replace(placer_config(), placer="inline")
        rng = random.Random(seed)
        with override_settings(DEBUG=False):
            for _ in range(count):
                placed += services.reserve(_ask(rng, pool.slug), config=config).reservation.status == "placed"
    booking_s = time.perf_counter() - started
    tenant = Tenant.objects.get(slug="bench-0")
    user, _ = User.objects.get_or_create(username=BENCH_USER, defaults={"is_staff": True})
    client = Client()
    client.force_login(user)
    tenant_scope = services.Scope(frozenset({tenant.slug}))
    url = f"/pools/{pool.slug}/"
    with override_settings(DEBUG=False, ALLOWED_HOSTS=["*"]):
        read = _timed(repeats, lambda: pool_availability(pool.slug, scope=services.EVERYONE))
        read_tenant = _timed(repeats, lambda: pool_availability(pool.slug, scope=tenant_scope))
        chart = _timed(repeats, lambda: pool_charts([pool.slug], services.EVERYONE))
        page = _timed(repeats, lambda: client.get(url))
        html = client.get(url).content
    return {
        "nodes": nodes,
        "requests": count,
        "placed": placed,
        "booking_seconds": round(booking_s, 1),
        "device_bookings_in_pool": DeviceBooking.objects.filter(allocation__node__pool=pool).count(),
        "reservations_in_next_14_days": Reservation.objects.filter(
            pool=pool,
            status="placed",
            starts_at__lt=timezone.now() + timedelta(days=14),
            ends_at__gt=timezone.now(),
        ).count(),
        "availability_read": _figures(*read),
        "availability_read_tenant": _figures(*read_tenant),
        "chart": _figures(*chart),
        "pool_page": _figures(*page),
        "pool_page_kib": round(len(html) / 1024, 1),
    }
