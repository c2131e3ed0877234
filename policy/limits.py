"""A pool policy's booking limits (docs/policy.md, Limits): refuse a booking past one with POLICY_LIMIT.

Two pool rules (capacity.rules). WINDOW, before any lock: `maxDuration` and `maxLeadTime`, checked
wherever a request is prepared (services.prepare) and per occurrence of a series, on the pool's
lookup. FUTURE_GPU_HOURS, once placed: `maxFutureGpuHours` needs the tenant's bookings, so it is
checked in the booking's transaction under the tenant's quota lock, and two requests of one tenant
at once cannot both pass (its pool places creates inline: a batch takes no quota lock).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.db import connection

from capacity.port import (
    LOCK_SQL,
    POLICY_LIMIT,
    QUOTA_LOCK_CLASS,
    Booking,
    CapacityError,
    PlacementRequest,
    PoolRow,
    Rule,
    gpu_hours_sql,
    prepared_cursor,
)

MS = timedelta(milliseconds=1)


def check_window(request: PlacementRequest, pool: PoolRow, now: datetime) -> None:
    """Refuse a window longer than maxDuration or starting later than maxLeadTime from now."""
    limits = pool.limits
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


def check_future_gpu_hours(booking: Booking) -> None:
    """Refuse when the tenant, its new booking written, would hold more than maxFutureGpuHours.

    Called in the booking's transaction once it is placed: takes the tenant's quota lock (held to
    the commit, as the charge holds it) and then reads, so a second request of the tenant waits
    and counts the first one. Raising rolls the booking back: nothing is written.
    """
    limit = booking.pool.limits.max_future_gpu_hours
    with connection.cursor() as cur:
        cur.execute(LOCK_SQL, {"class": QUOTA_LOCK_CLASS, "tenant": booking.tenant_pk})
    held = future_gpu_hours(booking.tenant_pk, booking.pool.pk, booking.now)
    if held > limit:
        raise CapacityError(
            POLICY_LIMIT, f"maxFutureGpuHours is {limit}; {booking.tenant_slug} would hold {_hours(held)}"
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


def _sets_window(pool: PoolRow) -> bool:
    return pool.limits is not None and (
        pool.limits.max_duration is not None or pool.limits.max_lead_time is not None
    )


def _sets_future_gpu_hours(pool: PoolRow) -> bool:
    return pool.limits is not None and pool.limits.max_future_gpu_hours is not None


WINDOW = Rule("limits.window", applies=_sets_window, before_lock=check_window)
FUTURE_GPU_HOURS = Rule(
    "limits.future-gpu-hours", applies=_sets_future_gpu_hours, placed=check_future_gpu_hours, quota_lock=True
)
RULES = (WINDOW, FUTURE_GPU_HOURS)
