"""A pool policy's booking limits (docs/policy.md, Limits): refuse a booking past one with POLICY_LIMIT.

`maxDuration` and `maxLeadTime` are checked in the prelude every booking goes through
(services.prepare), from the pool's lookup, before any lock. `maxFutureGpuHours` needs the
tenant's bookings: it is checked once the booking is placed, in its transaction, under the
tenant's quota lock, so two requests of one tenant at once cannot both pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.db import connection

from capacity.db.channels import QUOTA_LOCK_CLASS
from capacity.db.cursors import prepared_cursor
from capacity.gpu_hours import gpu_hours_sql
from capacity.placement import POLICY_LIMIT, CapacityError, PlacementRequest
from capacity.placers.loader import Limits
from capacity.placers.quota import LOCK_SQL

MS = timedelta(milliseconds=1)


def check_window(request: PlacementRequest, limits: Limits | None, now: datetime) -> None:
    """Refuse a window longer than maxDuration or starting later than maxLeadTime from now."""
    if limits is None:
        return
    window = request.during
    if limits.max_duration is not None:
        asks = (window.end - window.start) * MS
        if asks > limits.max_duration:
            raise CapacityError(
                POLICY_LIMIT,
                f"maxDuration is {_text(limits.max_duration)}; this asks {_text(asks, limits.max_duration)}",
            )
    if limits.max_lead_time is not None:
        lead = (window.start - int(now.timestamp() * 1000)) * MS
        if lead > limits.max_lead_time:
            raise CapacityError(
                POLICY_LIMIT,
                f"maxLeadTime is {_text(limits.max_lead_time)}; this starts in {_text(lead, limits.max_lead_time)}",
            )


def latest_start(limits: Limits | None, now: datetime) -> int | None:
    """Return the latest start (epoch ms) maxLeadTime allows, or None without the limit."""
    if limits is None or limits.max_lead_time is None:
        return None
    return int(now.timestamp() * 1000) + int(limits.max_lead_time / MS)


# The GPU-hours the tenant's bookings in the pool hold from now on (capacity.gpu_hours: a MIG slice
# its share, a leased node's GPUs once each).
FUTURE_GPU_HOURS_SQL = f"""
SELECT coalesce(sum({gpu_hours_sql("b", since="%(now)s::timestamptz")}), 0)
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  JOIN capacity_reservation r ON r.id = a.reservation_id
 WHERE r.tenant_id = %(tenant)s AND r.pool_id = %(pool)s AND upper(b.during) > %(now)s::timestamptz
"""


def future_gpu_hours(tenant_pk: int, pool_pk: int, now: datetime) -> Decimal:
    """Return the whole-GPU-hours the tenant's bookings in the pool hold after `now`, in one statement."""
    with prepared_cursor() as cur:
        cur.execute(FUTURE_GPU_HOURS_SQL, {"tenant": tenant_pk, "pool": pool_pk, "now": now})
        return cur.fetchone()[0]


def check_future_gpu_hours(
    limits: Limits | None, tenant_pk: int, tenant_slug: str, pool_pk: int, now: datetime
) -> None:
    """Refuse when the tenant, its new booking written, would hold more than maxFutureGpuHours.

    Called in the booking's transaction once it is placed: takes the tenant's quota lock (held to
    the commit, as the charge holds it) and then reads, so a second request of the tenant waits
    and counts the first one. Raising rolls the booking back: nothing is written.
    """
    if limits is None or limits.max_future_gpu_hours is None:
        return
    with connection.cursor() as cur:
        cur.execute(LOCK_SQL, {"class": QUOTA_LOCK_CLASS, "tenant": tenant_pk})
    held = future_gpu_hours(tenant_pk, pool_pk, now)
    if held > limits.max_future_gpu_hours:
        raise CapacityError(
            POLICY_LIMIT,
            f"maxFutureGpuHours is {limits.max_future_gpu_hours}; {tenant_slug} would hold {_hours(held)}",
        )


def _text(value: timedelta, like: timedelta | None = None) -> str:
    """Return a duration in days, hours or minutes (7d, 36h, 90m), rounded up to the minute.

    Weeks are written as days. Given `like` (the limit), its unit when the value is whole in it:
    a limit and what a booking asks read alike ("12h; this asks 24h").
    """
    minutes = max(-(-value // timedelta(minutes=1)), 1)
    units = (("d", 24 * 60), ("h", 60), ("m", 1))
    if like is not None:
        unit, size = next(u for u in units if u[1] == 1 or _text(like).endswith(u[0]))
        if minutes % size == 0:
            return f"{minutes // size}{unit}"
    for unit, size in units:
        if minutes % size == 0:
            return f"{minutes // size}{unit}"
    return f"{minutes}m"


def _hours(value: Decimal) -> str:
    """Return GPU-hours as a plain number: whole, else one decimal."""
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)
