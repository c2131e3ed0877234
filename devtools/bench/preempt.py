"""Preemption benchmark (bench_placements --spot-fill): a full pool, part spot work, regular requests taking it back."""

from __future__ import annotations

import dataclasses
import random
import time
from datetime import timedelta

from django.test.utils import override_settings
from django.utils import timezone

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.conf import placer_config
from capacity.models import Reservation
from devtools.bench.placements import SIZE_WEIGHTS, SIZES, _pct, build_pool


def _ask(pool: str, tenant: str, gpus: int, start, hours: int, priority: str = "regular") -> dict:
    end = start + timedelta(hours=hours)
    return {
        "tenantId": tenant,
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "priority": priority,
        "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
    }


def run_preemption(nodes: int, count: int, seed: int, spot_fill: float, previews: int, progress=None) -> dict:
    """Fill the pool for one day (`spot_fill` of its nodes with 8-GPU spot work, the rest regular),
    preview and then place `count` regular 1/2/4/8-GPU requests in that day, which must preempt."""
    pool = build_pool(nodes, 2, progress=progress)
    config = dataclasses.replace(placer_config(), placer="inline")
    start = timezone.now().replace(microsecond=0) + timedelta(hours=1)
    spot_nodes = round(nodes * spot_fill)
    with override_settings(DEBUG=False):
        for i in range(nodes):
            priority = "spot" if i < spot_nodes else "regular"
            # Spot work for a random 12 to 36 hours, so preemptions differ in cost.
            hours = 12 + (i * 7919) % 25 if priority == "spot" else 36
            services.reserve(_ask(pool.slug, "bench-1", 8, start, hours, priority), config=config)
        rng = random.Random(seed)
        asks = [
            _ask(pool.slug, "bench-0", rng.choices(SIZES, SIZE_WEIGHTS)[0], start, 6) for _ in range(count)
        ]
        preview_ms, offered = [], 0
        for data in asks[:previews]:
            t0 = time.perf_counter()
            found = services.preview(data, config=config)
            preview_ms.append((time.perf_counter() - t0) * 1000)
            offered += found.preemptible is not None
        latencies, preempted, placed = [], 0, 0
        started = time.perf_counter()
        for data in asks:
            t0 = time.perf_counter()
            result = services.reserve(data, config=config)
            latencies.append((time.perf_counter() - t0) * 1000)
            placed += result.reservation.status == "placed"
            preempted += bool(result.outcome and result.outcome.preempted)
        elapsed = time.perf_counter() - started
    latencies.sort()
    preview_ms.sort()
    return {
        "nodes": nodes,
        "spot_nodes": spot_nodes,
        "requests": count,
        "placed": placed,
        "placed_by_preempting": preempted,
        "spot_reservations_preempted": Reservation.objects.filter(pool=pool, status="preempted").count(),
        "seconds": round(elapsed, 3),
        "placements_per_s": round(count / elapsed, 1),
        "preemptions_per_s": round(preempted / elapsed, 1),
        "p50_ms": round(_pct(latencies, 50), 2),
        "p95_ms": round(_pct(latencies, 95), 2),
        "previews": len(preview_ms),
        "previews_with_preemptible": offered,
        "preview_p50_ms": round(_pct(preview_ms, 50), 2),
        "preview_p95_ms": round(_pct(preview_ms, 95), 2),
        "double_booked": len([line for line in booking_drift() if "overlap" in line]),
        "drift": len(audit()),
        "errors": [],
    }
