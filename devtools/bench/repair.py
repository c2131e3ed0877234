"""Repair benchmark (bench_placements --repair): a node with many future bookings fails; how fast they move."""

from __future__ import annotations

import dataclasses
import random
import time
from datetime import timedelta

from django.db import transaction
from django.test.utils import override_settings
from django.utils import timezone

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.conf import placer_config
from capacity.models import Reservation
from capacity.rollups import refresh_rollups
from devtools.bench.placements import build_pool
from inventory import services as inventory
from inventory.models import Node


def run_repair(nodes: int, bookings: int, seed: int, progress=None) -> dict:
    """Book `bookings` future 1/2-GPU windows on one node of the pool, then put it in maintenance.

    The maintenance commits and BookingRepair moves every booking on the node in the same call, as
    it does for an operator's click; the figures time that call and check where each booking went.
    """
    pool = build_pool(nodes, 1, progress=progress)
    config = dataclasses.replace(placer_config(), placer="inline")
    target = Node.objects.filter(pool=pool).order_by("name").first()
    others = Node.objects.filter(pool=pool).exclude(pk=target.pk)
    rng = random.Random(seed)
    now = timezone.now().replace(microsecond=0)
    with transaction.atomic():
        # Only the target takes bookings while they are made (the generation trigger sees it).
        others.update(cordoned=True)
        refresh_rollups([pool.pk])
    made = []
    with override_settings(DEBUG=False):
        while len(made) < bookings:
            start = now + timedelta(hours=1 + rng.randrange(0, 14 * 24))
            end = start + timedelta(hours=rng.choice((2, 4, 8)))
            result = services.reserve(
                {
                    "tenantId": "bench-0",
                    "poolId": pool.slug,
                    "devices": [{"class": "gpu", "count": rng.choice((1, 2))}],
                    "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
                },
                config=config,
            )
            if result.reservation.status == "placed":
                made.append(result.reservation.pk)
            else:
                services.release(result.reservation.pk)
        with transaction.atomic():
            others.update(cordoned=False)
            refresh_rollups([pool.pk])
        started = time.perf_counter()
        inventory.set_maintenance(target, True)  # the repair runs once this commits
        elapsed = time.perf_counter() - started
    moved = Reservation.objects.filter(pk__in=made, conditions__contains=[{"type": "Repaired"}]).count()
    still = (
        Reservation.objects.filter(
            pk__in=made, allocations__node=target, allocations__released_at__isnull=True
        )
        .distinct()
        .count()
    )
    inventory.set_maintenance(target, False)
    return {
        "nodes": nodes,
        "bookings_on_failed_node": len(made),
        "repaired": moved,
        "left_on_failed_node": still,
        "seconds": round(elapsed, 3),
        "repairs_per_s": round(moved / elapsed, 1) if elapsed else 0.0,
        "double_booked": len([line for line in booking_drift() if "overlap" in line]),
        "drift": len(audit()),
        "errors": [],
    }
