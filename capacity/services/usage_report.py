"""GPU-hours booked and used, by tenant, pool and GPU model, per day, week or month: showback.

Booked hours are each device booking's overlap with the period and the bucket (a released
booking's window ends at its release). A MIG slice counts as its share of its GPU: the slice's
compute slices over the GPU's seven (3g.40gb is 3/7 of a GPU). Used hours are the booked devices'
samples inside their bookings: each minute's utilization times a minute (slices have no samples
of their own, so their use is not counted). Whole hours are read from the hourly fold; an hour a
booking covers in part from its raw minutes while they are kept (USAGE_RAW_DAYS), after that as
the covered part of the hour's use. Tenants see their own rows; operators all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from capacity.placement import INVALID_INPUT, CapacityError
from inventory.samples import raw_horizon

from .scope import Scope

GROUPS = {
    "tenant": "t.slug",
    "pool": "p.slug",
    "model": "coalesce(d.attributes->>'productName', d.device_class)",
}
BUCKETS = ("day", "week", "month")
MAX_PERIOD = timedelta(days=366)
MAX_ROWS = 10_000

_SQL = """
WITH f AS (
  -- Hours before this are folded (none before the first fold: every minute is raw).
  SELECT coalesce((SELECT folded_until FROM inventory_samplefold LIMIT 1), '-infinity'::timestamptz) AS at
), b AS (
  SELECT {columns}, bk.device_id,
         CASE WHEN d.device_class LIKE 'mig-%%'
              THEN coalesce(substring(d.device_class from 'mig-(?:[0-9]+c[.])?([0-9]+)g')::numeric, 1) / 7
              ELSE 1 END AS share,
         tstzrange(greatest(lower(bk.during), %(start)s), least(upper(bk.during), %(end)s)) AS held
    FROM capacity_devicebooking_all bk
    -- A booking's allocation and reservation: joined from the live tables, and looked up by id in
    -- history only for those not there (12 monthly partitions a probe). Joined to the views whole,
    -- their estimates made the planner sort every reservation ever made (7 s for two weeks).
    LEFT JOIN capacity_allocation la ON la.id = bk.allocation_id
    CROSS JOIN LATERAL (
      SELECT coalesce(la.reservation_id, (SELECT x.reservation_id FROM capacity_allocationhistory x
                                           WHERE x.id = bk.allocation_id)) AS reservation_id) a
    LEFT JOIN capacity_reservation lr ON lr.id = a.reservation_id
    CROSS JOIN LATERAL (
      SELECT coalesce(lr.tenant_id, (SELECT y.tenant_id FROM capacity_reservationhistory y
                                      WHERE y.id = a.reservation_id)) AS tenant_id,
             coalesce(lr.pool_id, (SELECT y.pool_id FROM capacity_reservationhistory y
                                    WHERE y.id = a.reservation_id)) AS pool_id) r
    JOIN inventory_tenant t ON t.id = r.tenant_id
    JOIN inventory_pool p ON p.id = r.pool_id
    JOIN inventory_device d ON d.id = bk.device_id
   WHERE bk.during && tstzrange(%(start)s, %(end)s) {scoped}
), booked AS (
  -- Each booking meets only the buckets it spans (a two-day booking two days), not all of them.
  SELECT {keys}, k.lo,
         sum(b.share * extract(epoch FROM upper(b.held * tstzrange(k.lo, k.lo + %(step)s::interval))
                                       - lower(b.held * tstzrange(k.lo, k.lo + %(step)s::interval))) / 3600) AS hours
    FROM b CROSS JOIN LATERAL generate_series(
           date_trunc(%(bucket)s, lower(b.held)), upper(b.held) - interval '1 microsecond', %(step)s::interval) AS k(lo)
   WHERE NOT isempty(b.held)
   GROUP BY {keys}, k.lo
), used_hours AS (
  -- Folded hours: a whole hour inside the booking counts whole; one it covers in part counts as
  -- that part of the hour, but only once its raw minutes are gone (before that, used_raw reads them).
  SELECT {keys}, date_trunc(%(bucket)s, h.hour) AS lo,
         sum(h.gpu_percent_sum * CASE
               WHEN h.hour >= lower(b.held) AND h.hour + interval '1 hour' <= upper(b.held) THEN 1.0
               ELSE extract(epoch FROM upper(b.held * tstzrange(h.hour, h.hour + interval '1 hour'))
                                     - lower(b.held * tstzrange(h.hour, h.hour + interval '1 hour'))) / 3600
             END) / 100.0 / 60 AS hours
    FROM b JOIN inventory_devicesamplehour h
      ON h.device_id = b.device_id AND h.hour >= date_trunc('hour', lower(b.held))
     AND h.hour < least(upper(b.held), (SELECT at FROM f))
   WHERE NOT isempty(b.held)
     AND ((h.hour >= lower(b.held) AND h.hour + interval '1 hour' <= upper(b.held)) OR h.hour < %(raw)s)
   GROUP BY {keys}, date_trunc(%(bucket)s, h.hour)
), used_raw AS (
  -- Raw minutes: what is not folded yet, and the part-covered first and last hours while kept.
  -- Bounds, not `held @> minute`: the (device, minute) key serves a range, not a containment.
  SELECT {keys}, date_trunc(%(bucket)s, x.minute) AS lo, sum(x.gpu_percent) / 100.0 / 60 AS hours
    FROM b CROSS JOIN LATERAL (VALUES
           (greatest((SELECT at FROM f), lower(b.held)), upper(b.held)),
           (CASE WHEN date_trunc('hour', lower(b.held)) >= %(raw)s
                  AND (lower(b.held) > date_trunc('hour', lower(b.held))
                       OR upper(b.held) < date_trunc('hour', lower(b.held)) + interval '1 hour')
                 THEN lower(b.held) END,
            least(date_trunc('hour', lower(b.held)) + interval '1 hour', upper(b.held), (SELECT at FROM f))),
           (CASE WHEN date_trunc('hour', upper(b.held)) >= %(raw)s
                  AND upper(b.held) > date_trunc('hour', upper(b.held))
                  AND date_trunc('hour', upper(b.held)) > date_trunc('hour', lower(b.held))
                 THEN date_trunc('hour', upper(b.held)) END,
            least(upper(b.held), (SELECT at FROM f)))) AS r(lo, hi)
    JOIN inventory_devicesample x ON x.device_id = b.device_id AND x.minute >= r.lo AND x.minute < r.hi
   WHERE NOT isempty(b.held) AND r.lo < r.hi AND x.gpu_percent IS NOT NULL
   GROUP BY {keys}, date_trunc(%(bucket)s, x.minute)
), used AS (
  SELECT {keys}, lo, sum(hours) AS hours
    FROM (SELECT * FROM used_hours UNION ALL SELECT * FROM used_raw) u
   GROUP BY {keys}, lo
)
SELECT {keys_out}, booked.lo, booked.hours, coalesce(used.hours, 0)
  FROM booked LEFT JOIN used USING ({keys_using}, lo)
 ORDER BY booked.lo, {keys_order}
 LIMIT %(limit)s
"""


@dataclass(frozen=True)
class UsageRow:
    """One group's GPU-hours in one bucket."""

    keys: dict[str, str]
    bucket: datetime
    booked: float
    used: float

    def as_dict(self) -> dict:
        names = {"tenant": "tenantId", "pool": "poolId", "model": "gpuModel"}
        return {
            **{names[k]: v for k, v in self.keys.items()},
            "bucket": self.bucket.date().isoformat(),
            "gpuHoursBooked": round(self.booked, 3),
            "gpuHoursUsed": round(self.used, 3),
        }


def usage_report(
    start: datetime,
    end: datetime,
    group_by: list[str],
    bucket: str,
    scope: Scope,
    now: datetime | None = None,
) -> list[UsageRow]:
    """Return GPU-hours booked and used per group and bucket between start and end."""
    if end <= start:
        raise CapacityError(INVALID_INPUT, "to: must be after from")
    if end - start > MAX_PERIOD:
        raise CapacityError(INVALID_INPUT, f"the period is at most {MAX_PERIOD.days} days")
    if bucket not in BUCKETS:
        raise CapacityError(INVALID_INPUT, f"bucket: one of {', '.join(BUCKETS)}")
    if not group_by or any(g not in GROUPS for g in group_by) or len(set(group_by)) != len(group_by):
        raise CapacityError(INVALID_INPUT, f"groupBy: one or more of {', '.join(GROUPS)}, each once")
    keys = [f"g_{g}" for g in group_by]
    sql = _SQL.format(
        columns=", ".join(f"{GROUPS[g]} AS g_{g}" for g in group_by),
        scoped="AND t.slug = ANY(%(tenants)s)" if scope.tenants is not None else "",
        keys=", ".join(keys),
        keys_out=", ".join(f"booked.{k}" for k in keys),
        keys_using=", ".join(keys),
        keys_order=", ".join(f"booked.{k}" for k in keys),
    )
    params = {
        "start": start,
        "end": end,
        "bucket": bucket,
        "step": f"1 {bucket}",
        "limit": MAX_ROWS,
        "tenants": sorted(scope.tenants or ()),
        "raw": raw_horizon(now or timezone.now()),
    }
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return [
            UsageRow(
                dict(zip(group_by, row[: len(keys)], strict=True)),
                row[len(keys)],
                float(row[-2]),
                float(row[-1]),
            )
            for row in cur.fetchall()
        ]
