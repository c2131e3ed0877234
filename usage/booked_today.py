"""A UTC day's booked hours split at an instant, read from the rollups: booked to date, and of it lent.

A booking's piece of the day [start, end) is booked to date at `now` for share × (min(end, now) −
min(start, now)), a sum over its points. BookedPoints keeps their sums per hour of the point
(usage.models): an hour wholly before now's adds its `moment`, one after it now × its
`share`, and now's own hour, the only one a point of which may fall on either side, is read from
its bookings (those that start or end in it: an index probe each side, a few per hour however
many run through it). Exact, in GPU_HOUR units, like the day's total in BookedHours; the part
after now (booked ahead) is that total less this.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.db import connection

HOUR_US = 3_600_000_000

# A booking's (`bk`) tenant and pool (`r`), looked up as the rollup's triggers do: its allocation
# and its reservation, live or in history, one probe each (LIMIT keeps them probes: as joins, the
# planner hashed every allocation and reservation to meet a few thousand bookings).
BOOKING_KEYS_SQL = """CROSS JOIN LATERAL (
        SELECT reservation_id FROM capacity_allocation WHERE id = bk.allocation_id
        UNION ALL
        SELECT reservation_id FROM capacity_allocationhistory WHERE id = bk.allocation_id LIMIT 1) a
      CROSS JOIN LATERAL (
        SELECT tenant_id, pool_id FROM capacity_reservation WHERE id = a.reservation_id
        UNION ALL
        SELECT tenant_id, pool_id FROM capacity_reservationhistory WHERE id = a.reservation_id LIMIT 1) r"""

# Bookings with a point in [%(hour_lo)s, %(hour_hi)s): live ones through their indexes on lower and
# upper(during) (a BitmapOr); moved ones only from the partitions that ended since (none, most days).
_HOUR_BOOKINGS = """(
      SELECT allocation_id, during, layer, gpu_model, gpu_sevenths FROM capacity_devicebooking
       WHERE lower(during) >= %(hour_lo)s AND lower(during) < %(hour_hi)s
          OR upper(during) >= %(hour_lo)s AND upper(during) < %(hour_hi)s
      UNION ALL
      SELECT allocation_id, during, layer, gpu_model, gpu_sevenths FROM capacity_devicebookinghistory
       WHERE ended >= %(hour_lo)s AND (lower(during) >= %(hour_lo)s AND lower(during) < %(hour_hi)s
                                       OR upper(during) >= %(hour_lo)s AND upper(during) < %(hour_hi)s))"""

# SELECT tenant_id, pool_id, gpu_model, before, lent_before (GPU_HOUR units) of %(today)s at %(now)s,
# nothing unless %(in_period)s. Keys and sevenths as the rollup's triggers read them (capacity
# migration 0041).
TO_DATE_SQL = f"""
  SELECT tenant_id, pool_id, gpu_model, sum(before) AS before, sum(lent_before) AS lent_before FROM (
    SELECT tenant_id, pool_id, gpu_model,
           CASE WHEN hour < %(now_hour)s THEN moment ELSE %(now_us)s::numeric * share END AS before,
           CASE WHEN hour < %(now_hour)s THEN lent_moment ELSE %(now_us)s::numeric * lent_share END AS lent_before
      FROM capacity_bookedpoints WHERE day = %(today)s AND hour <> %(now_hour)s AND %(in_period)s
    UNION ALL
    SELECT tenant_id, pool_id, gpu_model,
           CASE WHEN hour < %(now_hour)s THEN moment ELSE %(now_us)s::numeric * share END,
           CASE WHEN hour < %(now_hour)s THEN lent_moment ELSE %(now_us)s::numeric * lent_share END
      FROM capacity_bookedpointschange WHERE day = %(today)s AND hour <> %(now_hour)s AND %(in_period)s
    UNION ALL
    -- Now's hour: each point of its bookings at min(point, now), starts −, ends +.
    SELECT r.tenant_id, r.pool_id, bk.gpu_model, v.before, CASE WHEN bk.layer = 1 THEN v.before ELSE 0 END
      FROM {_HOUR_BOOKINGS} bk
      CROSS JOIN LATERAL (VALUES (-1, lower(bk.during)), (1, upper(bk.during))) AS e(sign, at)
      {BOOKING_KEYS_SQL}
      CROSS JOIN LATERAL (
        SELECT e.sign * bk.gpu_sevenths::bigint
               * least(((extract(epoch FROM e.at) - extract(epoch FROM %(midnight)s::timestamptz)) * 1000000)::bigint,
                       %(now_us)s) AS before) v
     WHERE %(in_period)s AND e.at >= %(hour_lo)s AND e.at < %(hour_hi)s AND NOT isempty(bk.during)
  ) x GROUP BY 1, 2, 3 HAVING sum(before) <> 0 OR sum(lent_before) <> 0"""


def to_date_params(now: datetime, in_period: bool = True) -> dict:
    """Return TO_DATE_SQL's parameters for `now`'s UTC day."""
    now = now.astimezone(UTC)
    midnight = datetime.combine(now.date(), time(), tzinfo=UTC)
    now_us = (now - midnight) // timedelta(microseconds=1)
    hour = now_us // HOUR_US
    return {
        "today": now.date(),
        "midnight": midnight,
        "now_us": now_us,
        "now_hour": hour,
        "hour_lo": midnight + timedelta(hours=hour),
        "hour_hi": midnight + timedelta(hours=hour + 1),
        "in_period": in_period,
    }


def booked_to_date(now: datetime) -> dict[tuple[int, int, str], tuple[int, int]]:
    """Return (tenant pk, pool pk, model) -> (booked before now, of it lent) on now's UTC day, × GPU_HOUR."""
    with connection.cursor() as cur:
        cur.execute(TO_DATE_SQL, to_date_params(now))
        return {(t, p, m): (int(b), int(lent)) for t, p, m, b, lent in cur.fetchall() if b or lent}
