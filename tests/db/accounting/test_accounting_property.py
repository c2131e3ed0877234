"""Random sequences of book, release, retry, expire, cordon and report, checked after every step.

After each step quota, scalar room and the capacity buckets are recomputed here from the rows
(independently of capacity's own code) and compared, and check_capacity must find no drift.
"""

import random
from collections import defaultdict
from datetime import timedelta

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, Quota, QuotaCharge, Reservation, ScalarClaim
from capacity.placement import CapacityError
from capacity.placement.timeline import at
from capacity.rollups import capacity_by_pool
from inventory import services as nodes
from inventory.models import Device, NodeLabel, NodeResource, Pool

from booking import MS, NOW, config
from tenants import make_tenant

LIMITS = {"gpu": 6, "vcpu": 24}
VCPU = 16


def instants(rows):
    """Every instant where some row starts or ends: a step function's maximum is at one of them."""
    return sorted({t for lower, upper, _ in rows for t in (lower, upper)})


def check_quota():
    by_key = defaultdict(list)
    for tenant, resource, amount, during in QuotaCharge.objects.values_list(
        "tenant__slug", "resource", "amount", "during"
    ):
        by_key[(tenant, resource)].append((during.lower, during.upper, amount))
    for (tenant, resource), rows in by_key.items():
        most = max(at(rows, t) for t in instants(rows))
        assert most <= LIMITS[resource], f"{tenant} holds {most} {resource} at once"


def check_scalars():
    capacity = dict(NodeResource.objects.values_list("node_id", "allocatable"))
    by_node = defaultdict(list)
    for node, amount, during in ScalarClaim.objects.values_list("node_id", "amount", "during"):
        by_node[node].append((during.lower, during.upper, amount))
    for node, rows in by_node.items():
        assert max(at(rows, t) for t in instants(rows)) <= capacity[node]


def check_buckets(pool, clock):
    """Recount booked-now, booked-later and free atoms from the devices and bookings."""
    devices = list(Device.objects.filter(node__pool=pool).select_related("node"))
    parents = {d.parent_id for d in devices if d.parent_id}
    bookings = defaultdict(list)
    for device, during in DeviceBooking.objects.values_list("device_id", "during"):
        bookings[device].append(during)
    want = defaultdict(lambda: {"allocated": 0, "bookedLater": 0, "total": 0, "usable": 0})
    for d in devices:
        if d.pk in parents:
            continue
        row = want[d.device_class]
        row["total"] += 1
        now = any(b.lower <= clock < b.upper for b in bookings[d.pk])
        later = any(b.lower > clock for b in bookings[d.pk])
        row["allocated"] += now
        row["bookedLater"] += (not now) and later
        usable = not (d.node.cordoned or d.node.maintenance) and d.healthy and d.bookable
        row["usable"] += usable and not now
    got = {c["class"]: c for c in capacity_by_pool([pool.pk], clock)[pool.pk]}
    for device_class, row in want.items():
        counts = got[device_class]
        assert (counts["total"], counts["allocated"], counts["bookedLater"], counts["free"]) == (
            row["total"],
            row["allocated"],
            row["bookedLater"],
            row["usable"],
        ), device_class


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sequences_keep_quota_scalars_and_buckets_exact(seed, pool, make_node):
    """
    node-0..2: 4 GPUs, 16 vcpu each; acme and globex may each hold 6 GPUs and 24 vcpu at once.
    """
    rng = random.Random(seed)
    for i in range(3):
        node = make_node(f"node-{i}", gpus=4, vcpu=VCPU)
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    for slug in ("acme", "globex"):
        tenant = make_tenant(slug, default_quota=None)
        for resource, value in LIMITS.items():
            Quota.objects.create(tenant=tenant, resource=resource, limit=value)
    pool = Pool.objects.get(pk=pool.pk)
    clock = NOW
    cfg = config()
    seen = defaultdict(int)
    for _step in range(45):
        action = rng.choice(["book", "book", "book", "release", "retry", "expire", "cordon", "report"])
        seen[action] += 1
        if action == "book":
            start = int((clock - NOW).total_seconds() * 1000) + rng.randint(0, 48) * 3_600_000
            data = {
                "tenantId": rng.choice(["acme", "globex"]),
                "poolId": pool.slug,
                "devices": [{"class": "gpu", "count": rng.randint(1, 4)}] if rng.random() < 0.85 else [],
                "during": {"start": MS + start, "end": MS + start + rng.randint(1, 24) * 3_600_000},
            }
            if rng.random() < 0.6 or not data["devices"]:
                data["resources"] = {"vcpu": rng.randint(1, 12)}
            try:
                services.reserve(data, now=clock, config=cfg)
            except CapacityError as err:
                assert err.code == "QUOTA_EXCEEDED"
        elif action == "release":
            live = list(Reservation.objects.exclude(status="released").values_list("pk", flat=True))
            if live:
                services.release(rng.choice(live), now=clock)
        elif action == "retry":
            services.retry_pending([pool.pk], config=cfg, now=clock)
        elif action == "expire":
            clock += timedelta(hours=rng.randint(1, 12))
            services.expire_ended(now=clock)
        elif action == "cordon":
            name = f"node-{rng.randint(0, 2)}"
            node = pool.nodes.get(name=name)
            (nodes.uncordon if node.cordoned else nodes.cordon)(name)
        else:
            device = rng.choice(list(Device.objects.filter(node__pool=pool)))
            device.healthy = not device.healthy
            device.save()
        assert audit() == [], (seed, _step, action)
        check_quota()
        check_scalars()
        check_buckets(pool, clock)
    assert seen["book"] >= 10
