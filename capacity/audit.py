"""Recompute what capacity keeps by deltas and report every drift: rollups, scalars, quota, bookings."""

from __future__ import annotations

from collections import defaultdict

from django.db import connection
from django.db.models import Q

from inventory.models import NodeResource, Pool

from . import quota
from .models import Allocation, QuotaUsage, Reservation
from .models.reservations import QUEUED
from .rollups import compute_rollups, stored_rollups
from .services import stored_request


def audit() -> list[str]:
    """Return one line per drift; an empty list means everything agrees."""
    return [*rollup_drift(), *scalar_drift(), *quota_drift(), *booking_drift()]


def rollup_drift() -> list[str]:
    """Compare stored pool rollups with a recount from devices, nodes and bookings."""
    pool_ids = list(Pool.objects.values_list("pk", flat=True))
    computed, stored = compute_rollups(pool_ids), stored_rollups(pool_ids)
    slugs = dict(Pool.objects.values_list("pk", "slug"))
    lines = []
    for key in sorted(set(computed) | set(stored)):
        want, have = computed.get(key), stored.get(key)
        if want != have:
            lines.append(f"rollup {slugs.get(key[0], key[0])}/{key[1]}: stored {have}, recomputed {want}")
    return lines


def scalar_drift() -> list[str]:
    """Compare node_resources.allocated with the claims of unreleased allocations."""
    claimed: dict[tuple[int, str], int] = defaultdict(int)
    for node_id, resources in Allocation.objects.filter(released_at__isnull=True).values_list(
        "node_id", "resources"
    ):
        for resource, amount in (resources or {}).items():
            claimed[(node_id, resource)] += amount
    lines = []
    rows = NodeResource.objects.values_list("node_id", "node__name", "resource", "allocated")
    seen = set()
    for node_id, name, resource, allocated in rows:
        seen.add((node_id, resource))
        if claimed.get((node_id, resource), 0) != allocated:
            lines.append(
                f"scalar {name}/{resource}: allocated {allocated}, claimed {claimed.get((node_id, resource), 0)}"
            )
    lines += [
        f"scalar node {n}/{r}: claimed {v} but the node has no such resource"
        for (n, r), v in claimed.items()
        if (n, r) not in seen and v
    ]
    return lines


def quota_drift() -> list[str]:
    """Compare quota usage with what placed and queued reservations hold (queued: charged at admission)."""
    held: dict[tuple[int, str], int] = defaultdict(int)
    placed = Reservation.objects.filter(Q(status=Reservation.Status.PLACED) | QUEUED).only(
        "pk", "tenant_id", "request"
    )
    for reservation in placed:
        tenant_id = reservation.tenant_id
        for resource, amount in quota.demand(stored_request(reservation)).items():
            held[(tenant_id, resource)] += amount
    lines = []
    used = {(t, r): u for t, r, u in QuotaUsage.objects.values_list("tenant_id", "resource", "used")}
    for key in sorted(set(held) | set(used)):
        if held.get(key, 0) != used.get(key, 0):
            lines.append(f"quota tenant {key[0]}/{key[1]}: used {used.get(key, 0)}, held {held.get(key, 0)}")
    return lines


def booking_drift() -> list[str]:
    """Find double bookings (the constraint forbids them) and bookings that outlive their release."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT a.device_id, a.id, b.id FROM capacity_devicebooking a JOIN capacity_devicebooking b
                 ON a.device_id = b.device_id AND a.id < b.id AND a.during && b.during"""
        )
        lines = [f"device {d}: bookings {x} and {y} overlap" for d, x, y in cur.fetchall()]
        cur.execute(
            """SELECT b.id, al.id FROM capacity_devicebooking b JOIN capacity_allocation al ON al.id = b.allocation_id
                WHERE al.released_at IS NOT NULL AND upper(b.during) > greatest(al.released_at, lower(b.during))"""
        )
        lines += [f"booking {b}: outlives the release of allocation {a}" for b, a in cur.fetchall()]
    return lines
