"""A simulated day of lending (bench_lending): GPU-hours spot work ran on idle owners' lent GPUs.

The demo's shape: three pools of 8-GPU nodes (24, 24 and 14 nodes, `lend-h100`, `lend-pcie`,
`lend-a100`), each booked solid for the day by regular bookings of 2, 4 or 8 GPUs, lending on. A
third of the bookings are idle half the day: one spell of 12 hours starting at a random hour
between 00:00 and 12:00. The day runs in 15-minute ticks, through the services as the worker
and the agents would drive them: at a spell's start the booking is marked `Idle` (the idle
check's verdict); at its end its agent's sample shows the owner's process on its GPUs
(`process_owners`) and the worker's reclaim takes the lent work back; each tick brings new spot
requests (1, 2, 4 or 8 GPUs for 1 to 4 hours), those that find no room give up, and ended work
is released. Deterministic for a seed: the day is a fixed one in 2030, the random draws seeded.
"""

from __future__ import annotations

import dataclasses
import random
import time
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count

from capacity import services
from capacity.audit import audit
from capacity.conf import placer_config
from capacity.models import Allocation, DeviceBooking, PoolPolicy, Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.models.reservations import IDLE
from capacity.rollups import refresh_rollups
from inventory.models import Device, DeviceSample, Node, Pool, Site, Tenant
from policy.notice import finish_due
from policy.reclaim import count_lent_hours, reclaim_lapsed
from policy.reclaim_processes import reclaim_for_processes

DAY = datetime(2030, 1, 7, tzinfo=UTC)
TICK = timedelta(minutes=15)
POOLS = (("lend-h100", 24), ("lend-pcie", 24), ("lend-a100", 14))
OWNERS, SPOT = ("lend-acme", "lend-globex"), "lend-spot"
IDLE_CONDITION = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "simulated"}

# The GPU-hours of lent bookings (layer 1) within the day, whole GPUs only.
_LENT_SQL = """
SELECT coalesce(sum(extract(epoch FROM upper(b.during * %(day)s) - lower(b.during * %(day)s)) / 3600.0), 0)
  FROM capacity_devicebooking_all b
  JOIN inventory_device d ON d.id = b.device_id AND d.parent_id IS NULL
  JOIN inventory_node n ON n.id = d.node_id JOIN inventory_pool p ON p.id = n.pool_id
 WHERE b.layer = 1 AND b.during && %(day)s AND p.slug = ANY(%(pools)s)
"""


def build() -> list[Pool]:
    """Create (or empty) the three pools, their nodes and the tenants."""
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    for slug in (*OWNERS, SPOT):
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug})
        Quota.objects.update_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": 10**9})
    pools = []
    for slug, count in POOLS:
        pool, _ = Pool.objects.get_or_create(slug=slug, defaults={"name": slug, "site": site})
        PoolPolicy.objects.update_or_create(pool=pool, defaults={"lend_idle": True, "spot_notice": None})
        with transaction.atomic():
            DeviceBooking.objects.filter(allocation__node__pool=pool).delete()
            Allocation.objects.filter(node__pool=pool).delete()
            Reservation.objects.filter(pool=pool).delete()
            DeviceSample.objects.filter(device__node__pool=pool).delete()
        for i in range(Node.objects.filter(pool=pool).count(), count):
            node = Node.objects.create(name=f"{slug}-{i:02d}", pool=pool)
            Device.objects.bulk_create(
                Device(node=node, uuid=f"GPU-{node.name}-{g}", index=g, numa_node=g // 4) for g in range(8)
            )
        refresh_rollups([pool.pk])
        pools.append(pool)
    return pools


def _reserve(config, tenant: str, pool: str, gpus: int, start: datetime, hours: float, now, **extra):
    data = {
        "tenantId": tenant,
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {
            "start": int(start.timestamp() * 1000),
            "end": int((start + timedelta(hours=hours)).timestamp() * 1000),
        },
        **extra,
    }
    return services.reserve(data, config=config, now=now).reservation


def book_solid(config, pick: random.Random) -> list[tuple[int, datetime]]:
    """Book every pool's GPUs for the day; return the idle third: (reservation, its spell's start)."""
    spells = []
    for slug, count in POOLS:
        left = count * 8
        while left:
            gpus = min(left, pick.choice((2, 4, 8)))
            made = _reserve(config, pick.choice(OWNERS), slug, gpus, DAY, 24, DAY)
            if made.status != "placed":
                break  # what is left does not fit in one piece: the pool is as full as it gets
            left -= gpus
            if pick.random() < 1 / 3:
                spells.append((made.pk, DAY + timedelta(hours=pick.randrange(0, 13))))
    return spells


def _owner_busy(owner: int, at: datetime) -> None:
    """Write the minute's sample of the owner's GPUs: its own process on each (its agent attributes it)."""
    devices = DeviceBooking.objects.filter(allocation__reservation_id=owner, layer=0, device__parent=None)
    DeviceSample.objects.bulk_create(
        [
            DeviceSample(device_id=pk, minute=at, gpu_percent=60, processes=1, process_owners=[owner])
            for pk in devices.values_list("device_id", flat=True)
        ],
        ignore_conflicts=True,
    )


def run_lending(seed: int = 7, spot_per_tick: int = 6) -> dict:
    """Simulate the day; return the GPU-hours lent, the idle GPU-hours there were, and counts."""
    pick = random.Random(seed)
    pools = build()
    config = dataclasses.replace(placer_config(), random=None)
    clock = time.perf_counter()
    spells = book_solid(config, pick)
    gpus_of = dict(
        DeviceBooking.objects.filter(allocation__reservation_id__in=[pk for pk, _ in spells], layer=0)
        .values("allocation__reservation_id")
        .annotate(n=Count("id"))
        .values_list("allocation__reservation_id", "n")
    )
    placed = gave_up = reclaimed = 0
    now = DAY
    while now < DAY + timedelta(days=1):
        for owner, start in spells:
            if start == now:
                Reservation.objects.filter(pk=owner).update(conditions=[IDLE_CONDITION])
            elif start + timedelta(hours=12) == now:
                _owner_busy(owner, now)
        reclaimed += len(reclaim_for_processes(now=now))
        count_lent_hours(finish_due(now))
        services.expire_ended(now=now)
        reclaim_lapsed(now)
        for _ in range(spot_per_tick):
            slug = pick.choice(POOLS)[0]
            hours = pick.choice((1, 2, 3, 4))
            made = _reserve(config, SPOT, slug, pick.choice((1, 2, 4, 8)), now, hours, now, priority="spot")
            if made.status == "placed":
                placed += 1
            else:
                gave_up += 1
                services.release(made.pk, now=now)
        now += TICK
    with connection.cursor() as cur:
        cur.execute(
            _LENT_SQL,
            {
                "day": f"[{DAY.isoformat()},{(DAY + timedelta(days=1)).isoformat()})",
                "pools": [p for p, _ in POOLS],
            },
        )
        lent = float(cur.fetchone()[0])
    idle_hours = sum(gpus_of.get(pk, 0) * 12 for pk, _ in spells)
    return {
        "seed": seed,
        "gpus": sum(c for _, c in POOLS) * 8,
        "idleBookings": len(spells),
        "idleGpuHours": idle_hours,
        "gpuHoursLent": round(lent, 1),
        "lentShareOfIdle": round(lent / idle_hours, 3) if idle_hours else None,
        "spotPlaced": placed,
        "spotGaveUp": gave_up,
        "reclaimedByProcesses": reclaimed,
        "drift": len(audit()),
        "seconds": round(time.perf_counter() - clock, 1),
        "pools": [p.slug for p in pools],
    }
