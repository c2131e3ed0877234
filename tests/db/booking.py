"""Helpers for booking tests: a fixed clock and requests built in a line."""

import dataclasses
from datetime import UTC, datetime

from capacity import services
from capacity.conf import placer_config

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
MS = int(NOW.timestamp() * 1000)
HOUR = 3_600_000


def config(**kw):
    """The settings' placer config without the random top-N pick, so tests know the node."""
    return dataclasses.replace(placer_config(), random=None, **kw)


def ask(gpus=1, tenant="acme", pool="lab-pool", start=0, hours=24, **extra):
    return {
        "tenantId": tenant,
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": MS + start * HOUR, "end": MS + (start + hours) * HOUR},
        **extra,
    }


def reserve(data, now=NOW, **kw):
    """Reserve as of `now` (NOW by default): a window may not start well before it."""
    return services.reserve(data, now=now, config=config(), **kw)


def booked_at(data):
    """Return the instant a request's window starts: booking then is never too late."""
    return datetime.fromtimestamp(data["during"]["start"] / 1000, UTC)


def held(resource="gpu", tenant="acme", at=NOW):
    """Return what a tenant's quota charges hold of a resource at an instant."""
    from capacity.models import QuotaCharge

    charges = QuotaCharge.objects.filter(tenant__slug=tenant, resource=resource, during__contains=at)
    return sum(charges.values_list("amount", flat=True))


def claimed(resource="vcpu", at=NOW, node=None):
    """Return what scalar claims hold of a resource at an instant (on one node, or all)."""
    from capacity.models import ScalarClaim

    claims = ScalarClaim.objects.filter(resource=resource, during__contains=at)
    if node is not None:
        claims = claims.filter(node__name=node)
    return sum(claims.values_list("amount", flat=True))


def capacity(pool="lab-pool", device_class="gpu", at=NOW):
    """Return a pool's counts of one class at an instant, as the pages and the API show them."""
    from capacity.rollups import capacity_by_pool
    from inventory.models import Pool

    pk = Pool.objects.get(slug=pool).pk
    return next(c for c in capacity_by_pool([pk], at)[pk] if c["class"] == device_class)


def atoms_of(reservation):
    """Return (node, atoms) of each live allocation of a reservation."""
    return [
        (a["nodeId"], a["atoms"]) for a in services.allocations_of(reservation) if a["releasedAt"] is None
    ]


def from_real_now(hours=0):
    """Return the `start` offset (hours after NOW) of a window that starts `hours` after the real clock.

    For bookings that code running after a commit (BookingRepair) reads with the real clock.
    """
    from django.utils import timezone

    return int((timezone.now() - NOW).total_seconds() // 3600) + 1 + hours


def iso_at(offset_hours):
    """Return NOW plus `offset_hours` hours as ISO 8601 (a maintenance window's start or end)."""
    from datetime import timedelta

    return (NOW + timedelta(hours=offset_hours)).isoformat()


def lease(hours=1, **extra):
    """Return a whole-node lease's input (binding node, no devices) of `hours` from NOW."""
    data = ask(1, hours=hours, binding="node", **extra)
    del data["devices"]
    return data


def partitioned_node(make_node, name="node-a"):
    """An 8-GPU node whose GPU 0 is split into 3g, 3g and GPU 1 into 4g, 2g, 1g (6/7 and 7/7 of a GPU)."""
    from capacity.rollups import refresh_rollups
    from inventory.models import Device

    node = make_node(name, gpus=8)
    for parent_index, kinds in (
        (0, ("mig-3g.40gb", "mig-3g.40gb")),
        (1, ("mig-4g.40gb", "mig-2g.20gb", "mig-1g.10gb")),
    ):
        parent = Device.objects.get(node=node, index=parent_index)
        for i, kind in enumerate(kinds):
            Device.objects.create(
                node=node,
                uuid=f"MIG-{name}-{parent_index}-{i}",
                device_class=kind,
                parent=parent,
                index=10 * (parent_index + 1) + i,
            )
    refresh_rollups([node.pool_id])
    return node
