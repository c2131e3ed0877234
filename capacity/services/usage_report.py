"""GPU-hours booked and used, by tenant, pool and GPU model, per day, week or month: showback.

Booked hours are each device booking's overlap with the period and the bucket (a released
booking's window ends at its release). A MIG slice counts as its share of its GPU: the slice's
compute slices over the GPU's seven (3g.40gb is 3/7 of a GPU). Used hours are the booked devices'
samples inside their bookings: each minute's utilization times a minute (slices have no samples
of their own, so their use is not counted). Tenants see their own rows; operators all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection

from capacity.placement import INVALID_INPUT, CapacityError

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
WITH b AS (
  SELECT {columns}, bk.device_id,
         CASE WHEN d.device_class LIKE 'mig-%%'
              THEN coalesce(substring(d.device_class from 'mig-(?:[0-9]+c[.])?([0-9]+)g')::numeric, 1) / 7
              ELSE 1 END AS share,
         tstzrange(greatest(lower(bk.during), %(start)s), least(upper(bk.during), %(end)s)) AS held
    FROM capacity_devicebooking bk
    JOIN capacity_allocation a ON a.id = bk.allocation_id
    JOIN capacity_reservation r ON r.id = a.reservation_id
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
), used AS (
  -- Each sample's bucket is date_trunc of its minute (the buckets' own bounds), not a join on
  -- them: a month of samples times thirty buckets took seconds.
  SELECT {keys}, date_trunc(%(bucket)s, x.minute) AS lo, sum(x.gpu_percent) / 100.0 / 60 AS hours
    -- Bounds, not `held @> minute`: the (device, minute) key serves a range, not a containment.
    FROM b JOIN inventory_devicesample x
      ON x.device_id = b.device_id AND x.minute >= lower(b.held) AND x.minute < upper(b.held)
   WHERE x.gpu_percent IS NOT NULL
   GROUP BY {keys}, date_trunc(%(bucket)s, x.minute)
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
    start: datetime, end: datetime, group_by: list[str], bucket: str, scope: Scope
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
