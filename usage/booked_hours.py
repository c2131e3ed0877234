"""GPU-hours booked per tenant, pool, GPU model and UTC day: the rollup the usage report reads.

Statement triggers on the live and history bookings (capacity migration 0035) append every change
to BookedHoursChange in the booking's own transaction, so the figures are exact the moment it
commits and a history move nets to nothing. The worker's round folds the changes into BookedHours
(one row per key) every FOLD_EVERY seconds (usage.jobs), so a month's report reads a few rows a day
whatever the bookings. A reader sums both tables; `booked_hours_drift` (check_capacity's audit)
recounts them from the bookings. Each booking counts the sevenths and the model it kept when booked
(capacity.gpu_hours, capacity migration 0041), never its device now. The same triggers and fold
keep BookedPoints (capacity migration 0038): where the bookings start and end in each day, per
hour, so that the report splits today at now from rows too (usage.report).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction

from .models import GPU_HOUR

# One folder at a time: two would only wait for each other's rows.
_LOCK = 0x4265_7274_4248  # "BertBH"

_FOLD_SQL = """
WITH moved AS (
  DELETE FROM capacity_bookedhourschange RETURNING tenant_id, pool_id, gpu_model, day, booked, lent
)
INSERT INTO capacity_bookedhours AS h (tenant_id, pool_id, gpu_model, day, booked, lent)
SELECT tenant_id, pool_id, gpu_model, day, sum(booked), sum(lent) FROM moved
 GROUP BY day, tenant_id, pool_id, gpu_model ORDER BY day, tenant_id, pool_id, gpu_model
    ON CONFLICT (day, tenant_id, pool_id, gpu_model)
    DO UPDATE SET booked = h.booked + excluded.booked, lent = h.lent + excluded.lent
RETURNING h.id, h.booked = 0 AND h.lent = 0
"""


_FOLD_POINTS_SQL = """
WITH moved AS (
  DELETE FROM capacity_bookedpointschange
  RETURNING tenant_id, pool_id, gpu_model, day, hour, share, moment, lent_share, lent_moment
)
INSERT INTO capacity_bookedpoints AS h (tenant_id, pool_id, gpu_model, day, hour, share, moment, lent_share, lent_moment)
SELECT tenant_id, pool_id, gpu_model, day, hour, sum(share), sum(moment), sum(lent_share), sum(lent_moment) FROM moved
 GROUP BY day, tenant_id, pool_id, gpu_model, hour ORDER BY day, tenant_id, pool_id, gpu_model, hour
    ON CONFLICT (day, tenant_id, pool_id, gpu_model, hour)
    DO UPDATE SET share = h.share + excluded.share, moment = h.moment + excluded.moment,
                  lent_share = h.lent_share + excluded.lent_share, lent_moment = h.lent_moment + excluded.lent_moment
RETURNING h.id, h.share = 0 AND h.moment = 0 AND h.lent_share = 0 AND h.lent_moment = 0
"""


@dataclass(frozen=True)
class Folded:
    """What one fold did: the hours rows it wrote and dropped (came to nothing), and the points rows."""

    rows: int
    dropped: int
    point_rows: int = 0
    points_dropped: int = 0


def fold_booked_hours() -> Folded:
    """Fold the changes the triggers appended into one row per key; drop rows that came to zero."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LOCK])
        if not cur.fetchone()[0]:
            return Folded(0, 0)
        cur.execute(_FOLD_SQL)
        written = cur.fetchall()
        empty = [pk for pk, zero in written if zero]
        if empty:
            cur.execute("DELETE FROM capacity_bookedhours WHERE id = ANY(%s)", [empty])
        cur.execute(_FOLD_POINTS_SQL)
        points = cur.fetchall()
        no_points = [pk for pk, zero in points if zero]
        if no_points:
            cur.execute("DELETE FROM capacity_bookedpoints WHERE id = ANY(%s)", [no_points])
    return Folded(len(written), len(empty), len(points), len(no_points))


# Each day's piece of each booking of a reservation (live or in history), cut into UTC days by range
# intersection, with the sevenths of a GPU and the model it kept when booked (capacity.gpu_hours):
# what both recounts for the audit start from.
_PIECES_SQL = """
  SELECT r.tenant_id, r.pool_id, b.gpu_model, b.layer, k.day, b.gpu_sevenths::bigint AS share,
         b.during * tstzrange(k.day, k.day + interval '24 hours') AS piece
    FROM capacity_devicebooking_all b
    JOIN capacity_allocation_all a ON a.id = b.allocation_id
    JOIN capacity_reservation_all r ON r.id = a.reservation_id
    CROSS JOIN LATERAL generate_series(date_trunc('day', lower(b.during), 'UTC'),
                                       upper(b.during) - interval '1 microsecond', interval '24 hours') AS k(day)
   WHERE b.gpu_sevenths <> 0"""

# The same figures recounted another way, for the audit: each piece's share times its microseconds.
_RECOUNT_SQL = (
    "WITH pieces AS ("
    + _PIECES_SQL
    + """
), days AS (
  SELECT tenant_id, pool_id, gpu_model, layer, day,
         share * round(extract(epoch FROM upper(piece) - lower(piece)) * 1000000)::bigint AS amount
    FROM pieces
), recounted AS (
  SELECT tenant_id, pool_id, gpu_model, (day AT TIME ZONE 'UTC')::date AS day,
         sum(amount) AS booked, coalesce(sum(amount) FILTER (WHERE layer = 1), 0) AS lent
    FROM days GROUP BY 1, 2, 3, 4
), kept AS (
  SELECT tenant_id, pool_id, gpu_model, day, sum(booked) AS booked, sum(lent) AS lent FROM (
    SELECT tenant_id, pool_id, gpu_model, day, booked, lent FROM capacity_bookedhours
    UNION ALL
    SELECT tenant_id, pool_id, gpu_model, day, booked, lent FROM capacity_bookedhourschange) x
   GROUP BY 1, 2, 3, 4
)
SELECT coalesce(k.tenant_id, c.tenant_id), coalesce(k.pool_id, c.pool_id), coalesce(k.gpu_model, c.gpu_model),
       coalesce(k.day, c.day), coalesce(k.booked, 0), coalesce(c.booked, 0), coalesce(k.lent, 0), coalesce(c.lent, 0)
  FROM kept k FULL JOIN recounted c USING (tenant_id, pool_id, gpu_model, day)
 WHERE coalesce(k.booked, 0) <> coalesce(c.booked, 0) OR coalesce(k.lent, 0) <> coalesce(c.lent, 0)
 ORDER BY 4, 1, 2, 3
"""
)


# The points recounted the same way: each day's piece of each booking, its start (−) and end (+) as
# µs since the day's midnight, none at midnight itself; summed per hour of the point.
_RECOUNT_POINTS_SQL = (
    "WITH pieces AS ("
    + _PIECES_SQL
    + """
), points AS (
  SELECT tenant_id, pool_id, gpu_model, (day AT TIME ZONE 'UTC')::date AS day, layer, e.sign * share AS share,
         round(extract(epoch FROM e.at - day) * 1000000)::bigint AS x
    FROM pieces CROSS JOIN LATERAL (VALUES (-1, lower(piece)), (1, upper(piece))) AS e(sign, at)
), recounted AS (
  SELECT tenant_id, pool_id, gpu_model, day, (x / 3600000000)::int AS hour, sum(share) AS share,
         sum(share * x) AS moment, coalesce(sum(share) FILTER (WHERE layer = 1), 0) AS lent_share,
         coalesce(sum(share * x) FILTER (WHERE layer = 1), 0) AS lent_moment
    FROM points WHERE x > 0 GROUP BY 1, 2, 3, 4, 5
), kept AS (
  SELECT tenant_id, pool_id, gpu_model, day, hour, sum(share) AS share, sum(moment) AS moment,
         sum(lent_share) AS lent_share, sum(lent_moment) AS lent_moment FROM (
    SELECT tenant_id, pool_id, gpu_model, day, hour, share, moment, lent_share, lent_moment FROM capacity_bookedpoints
    UNION ALL
    SELECT tenant_id, pool_id, gpu_model, day, hour, share, moment, lent_share, lent_moment
      FROM capacity_bookedpointschange) x
   GROUP BY 1, 2, 3, 4, 5
)
SELECT coalesce(k.tenant_id, c.tenant_id), coalesce(k.pool_id, c.pool_id), coalesce(k.gpu_model, c.gpu_model),
       coalesce(k.day, c.day), coalesce(k.hour, c.hour),
       ARRAY[coalesce(k.share, 0), coalesce(k.moment, 0), coalesce(k.lent_share, 0), coalesce(k.lent_moment, 0)],
       ARRAY[coalesce(c.share, 0), coalesce(c.moment, 0), coalesce(c.lent_share, 0), coalesce(c.lent_moment, 0)]
  FROM kept k FULL JOIN recounted c USING (tenant_id, pool_id, gpu_model, day, hour)
 WHERE (coalesce(k.share, 0), coalesce(k.moment, 0), coalesce(k.lent_share, 0), coalesce(k.lent_moment, 0))
       IS DISTINCT FROM (coalesce(c.share, 0), coalesce(c.moment, 0), coalesce(c.lent_share, 0), coalesce(c.lent_moment, 0))
 ORDER BY 4, 1, 2, 3, 5
"""
)


def _hours(amount: int) -> str:
    return f"{amount / GPU_HOUR:.6f}"


def booked_hours_drift() -> list[str]:
    """Compare the booked hours kept per tenant, pool, model and day with a recount from the bookings."""
    with connection.cursor() as cur:
        cur.execute(_RECOUNT_SQL)
        return [
            f"booked hours {tenant}/{pool}/{model}/{day}: stored {_hours(kept)} h ({_hours(kept_lent)} lent),"
            f" bookings sum to {_hours(counted)} h ({_hours(counted_lent)} lent)"
            for tenant, pool, model, day, kept, counted, kept_lent, counted_lent in cur.fetchall()
        ] + booked_points_drift()


def booked_points_drift() -> list[str]:
    """Compare the booked points kept per key, day and hour with a recount from the bookings."""
    with connection.cursor() as cur:
        cur.execute(_RECOUNT_POINTS_SQL)
        return [
            f"booked points {tenant}/{pool}/{model}/{day} hour {hour}: stored (share, moment, lent share, lent moment)"
            f" {tuple(int(v) for v in kept)}, bookings sum to {tuple(int(v) for v in counted)}"
            for tenant, pool, model, day, hour, kept, counted in cur.fetchall()
        ]
