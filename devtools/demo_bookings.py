"""The demo's bookings and its maintenance window, booked through the placer as a tenant would.

Each booking has a stable idempotency key: one that exists (live or moved to history) is not
booked again, so a second seed books nothing and keeps what tenants released.
"""

import dataclasses
from datetime import timedelta

from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import AnyReservation, Series
from inventory.models import Tenant
from maintenance.windows import schedule
from series.book import reserve_series

ACTOR = (
    "command:seed_demo"  # who the audit and the node history name for what the seed creates (command:NAME)
)

DEMO_SERIES = "demo-series-1"
# (key, tenant, pool, GPUs, start offset, length) relative to the first seeding.
BOOKINGS = (
    ("demo-past-1", "acme", "h100-prod", 8, timedelta(days=-10), timedelta(days=3)),
    ("demo-past-2", "globex", "pcie-batch", 4, timedelta(days=-5), timedelta(days=2)),
    ("demo-now-1", "acme", "h100-prod", 8, timedelta(hours=-6), timedelta(days=2)),
    ("demo-now-2", "acme", "h100-prod", 4, timedelta(hours=-2), timedelta(days=1)),
    ("demo-now-3", "globex", "pcie-batch", 2, timedelta(hours=-1), timedelta(hours=12)),
    ("demo-now-4", "globex", "a100-mig", 4, timedelta(hours=-3), timedelta(days=1)),
    ("demo-future-1", "globex", "h100-prod", 8, timedelta(days=2), timedelta(days=3)),
    ("demo-future-2", "acme", "pcie-batch", 8, timedelta(days=1), timedelta(hours=8)),
    # Spot work regular work may take back, and a whole-node lease (GPUs 0: the whole node).
    ("demo-spot-1", "acme", "h100-prod", 4, timedelta(hours=-1), timedelta(days=1)),
    ("demo-spot-2", "acme", "a100-mig", 2, timedelta(hours=-1), timedelta(hours=20)),
    ("demo-lease-1", "globex", "h100-prod", 0, timedelta(hours=-1), timedelta(days=2)),
)


def build_bookings(tenants: dict[str, Tenant]) -> int:
    """Book the demo reservations through the placer; return how many were new.

    The placer picks the best node (no random top-N pick here, so a fresh demo is reproducible);
    reservations whose window is over are released at their end.
    """
    config = dataclasses.replace(placer_config(), random=None)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    created = 0
    for key, tenant_slug, pool, gpus, offset, length in BOOKINGS:
        # Live or moved to history: a booking released long ago is not booked again.
        if AnyReservation.objects.filter(tenant=tenants[tenant_slug], idempotency_key=key).exists():
            continue
        start, end = now + offset, now + offset + length
        data: dict = {
            "tenantId": tenant_slug,
            "poolId": pool,
            "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
            "idempotencyKey": key,
        }
        if gpus:
            data["devices"] = [{"class": "gpu", "count": gpus}]
            data["resources"] = {"vcpu": 8 * gpus, "memoryGiB": 64 * gpus}
        else:
            data["binding"] = "node"
        if key.startswith("demo-spot"):
            data["priority"] = "spot"
        result = services.reserve(
            data,
            config=config,
            # Past windows are booked as if at their start: a booking that starts well before now
            # is refused today.
            now=min(start, now),
        )
        if end <= now:
            services.release(result.reservation.pk, now=end)
        created += 1
    return created + build_series(tenants["acme"], config, now)


def build_series(acme: Tenant, config, now) -> int:
    """Book acme's teaching lab: pcie-batch, 2 GPUs every Monday and Wednesday 09:00-12:00 UTC from
    next Monday, six times (docs/series.md); return how many occurrences were new."""
    if Series.objects.filter(tenant=acme, idempotency_key=DEMO_SERIES).exists():
        return 0
    monday = now.replace(hour=9) + timedelta(days=(7 - now.weekday()) % 7 or 7)
    window = {"start": monday.isoformat(), "end": (monday + timedelta(hours=3)).isoformat()}
    done = reserve_series(
        {
            "tenantId": acme.slug,
            "poolId": "pcie-batch",
            "devices": [{"class": "gpu", "count": 2}],
            "resources": {"vcpu": 16, "memoryGiB": 128},
            "during": window,
            "repeat": {"freq": "weekly", "byDay": ["MO", "WE"], "count": 6},
            "idempotencyKey": DEMO_SERIES,
        },
        config=config,
        by=ACTOR,
    )
    return len(done.occurrences)


DEMO_WINDOW_NODE = "ams1-dgx-02"


def build_window() -> None:
    """Schedule a firmware window on one h100-prod node, three days ahead (with the node: a window
    an operator cancelled is not scheduled again).

    Its node page and the pool's chart show it; new work keeps off it (docs/repair-and-drain.md).
    """
    start = (timezone.now() + timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    body = {
        "nodes": [DEMO_WINDOW_NODE],
        "start": start.isoformat(),
        "end": (start + timedelta(hours=12)).isoformat(),
    }
    schedule({**body, "reason": "firmware update"}, by=ACTOR)
