"""GPU-hours booked and used, by tenant, pool and GPU model, per day, week or month: showback.

A period is whole UTC days, `to` included: from=2026-12-01&to=2026-12-01 is that one day, from its
midnight to the next. Page, API, CSV and usage_report read it the same way (usage_period).

Booked hours are each device booking's overlap with the period and the bucket (a released
booking's window ends at its release), up to now: the hours after now are booked *ahead*, a
figure of their own, never booked to date. A MIG slice counts as its share of its GPU: the slice's
compute slices over the GPU's seven (3g.40gb is 3/7 of a GPU), a leased node's split GPU once, and
each booking counts under the model its GPU had when booked (capacity.gpu_hours). Every day is
read from the booked-hours rollup (usage.booked_hours: a row per tenant, pool, model and UTC
day); today is split at now by the booked-points rollup (where bookings start and end, per hour)
and the few bookings that start or end in now's own hour (usage.booked_today), exactly. Used hours are the booked devices' samples inside
their bookings (only bookings of GPUs that have samples in the period are read): each minute's utilization times a minute (slices have no samples
of their own, so their use is not counted). Whole hours are read from the hourly fold; an hour a
booking covers in part from its raw minutes while they are kept (USAGE_RAW_DAYS), after that as
the covered part of the hour's use. Tenants see their own rows; operators all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.utils import timezone

from capacity.port import INVALID_INPUT, CapacityError, Scope, gpus_sql, parse_day
from usage.booked_today import BOOKING_KEYS_SQL, TO_DATE_SQL, to_date_params
from usage.folds import raw_horizon
from usage.models import GPU_HOUR

GROUPS = {
    "tenant": "t.slug",
    "pool": "p.slug",
    # The model each booking kept when booked (capacity.gpu_hours), as the booked-hours rollup keys it.
    "model": "bk.gpu_model",
}
# Each group's column in a row, the API's and the CSV's.
KEY_NAMES = {"tenant": "tenantId", "pool": "poolId", "model": "gpuModel"}
# The same groups over the booked-hours rollup's rows (`k`).
KEPT_GROUPS = {**GROUPS, "model": "k.gpu_model"}
BUCKETS = ("day", "week", "month")
MAX_PERIOD = timedelta(days=366)
MAX_ROWS = 10_000
# What people read above each column (the API's and CSV's keys stay as they are).
HEADINGS = {
    "tenantId": "Tenant",
    "poolId": "Pool",
    "gpuModel": "GPU model",
    "gpuHoursBooked": "GPU-hours booked",
    "gpuHoursUsed": "GPU-hours used",
    "gpuHoursBookedAhead": "GPU-hours booked ahead",
    "gpuHoursLent": "GPU-hours lent",
}
BUCKET_HEADINGS = {"day": "Day", "week": "Week of", "month": "Month"}


def heading(column: str, bucket: str) -> str:
    """Return a column's heading in words: "GPU-hours booked", "Week of"."""
    return BUCKET_HEADINGS[bucket] if column == "bucket" else HEADINGS[column]


# A booking's keys (usage.booked_today.BOOKING_KEYS_SQL), device and window cut to `window`.
_BOOKINGS = (
    """
  SELECT {columns}, bk.device_id, bk.layer, {share} AS share, bk.during * {window} AS held
    FROM {source}
    """
    + BOOKING_KEYS_SQL
    + """
    JOIN inventory_tenant t ON t.id = r.tenant_id
    JOIN inventory_pool p ON p.id = r.pool_id"""
)

# Each sampled GPU's bookings in the period: a probe of the device's range and the window into the
# live and the history tables' GiST indexes. OFFSET 0 keeps it a probe per GPU: flattened into a
# join, the planner read every booking of the period (70 s with the lookups, bench_usage).
_SAMPLED_BOOKINGS = """sampled s CROSS JOIN LATERAL (
      SELECT * FROM capacity_devicebooking_all x
       WHERE int8range(x.device_id, x.device_id, '[]') && int8range(s.id, s.id, '[]')
         AND x.during && tstzrange(%(start)s, %(end)s) OFFSET 0) bk"""

_SQL = f"""
WITH f AS (
  -- Hours before this are folded (none before the first fold: every minute is raw).
  SELECT coalesce((SELECT folded_until FROM inventory_samplefold LIMIT 1), '-infinity'::timestamptz) AS at
), kept AS (
  -- Every whole day from the booked-hours rollup (usage.booked_hours): its folded rows and the
  -- changes the worker has not folded yet. A day before today is booked to date, one after it
  -- booked ahead; today is split at now below.
  SELECT tenant_id, pool_id, gpu_model, day, sum(booked) AS booked, sum(lent) AS lent FROM (
    SELECT tenant_id, pool_id, gpu_model, day, booked, lent FROM capacity_bookedhours
     WHERE day >= %(first)s AND day <= %(last)s
    UNION ALL
    SELECT tenant_id, pool_id, gpu_model, day, booked, lent FROM capacity_bookedhourschange
     WHERE day >= %(first)s AND day <= %(last)s) x
   GROUP BY 1, 2, 3, 4 HAVING sum(booked) <> 0
), split AS (
  -- Per key and day: booked to date, ahead and lent, in the rollup's units. Today's part before now
  -- comes from the booked-points rollup and the bookings with a point in now's hour (usage.booked_today).
  SELECT tenant_id, pool_id, gpu_model, day,
         CASE WHEN day < %(today)s THEN booked ELSE 0 END AS before,
         CASE WHEN day < %(today)s THEN 0 ELSE booked END AS ahead,
         CASE WHEN day < %(today)s THEN lent ELSE 0 END AS lent
    FROM kept
  UNION ALL
  SELECT tenant_id, pool_id, gpu_model, %(today)s, before, -before, lent_before FROM ({TO_DATE_SQL}) n
), booked AS (
  SELECT {{kept_columns}}, date_trunc(%(bucket)s, k.day::timestamp AT TIME ZONE 'UTC') AS lo,
         sum(k.before) / {GPU_HOUR}.0 AS hours, sum(k.ahead) / {GPU_HOUR}.0 AS ahead, sum(k.lent) / {GPU_HOUR}.0 AS lent
    FROM split k JOIN inventory_tenant t ON t.id = k.tenant_id JOIN inventory_pool p ON p.id = k.pool_id
   WHERE true {{scoped}}
   GROUP BY {{keys}}, lo
), sampled AS MATERIALIZED (
  -- GPUs with a sample in the period, one index probe a device (OFFSET 0 keeps each EXISTS a
  -- probe: hashed, it read every sample of the period): used hours read only their bookings.
  SELECT d.id FROM inventory_device d
   -- None at all (a fleet without agents): one look at each table's BRIN summary, no probe a GPU.
   WHERE (EXISTS (SELECT 1 FROM inventory_devicesamplehour WHERE hour >= %(start)s AND hour < %(end)s)
          OR EXISTS (SELECT 1 FROM inventory_devicesample WHERE minute >= %(start)s AND minute < %(end)s))
     AND (EXISTS (SELECT 1 FROM inventory_devicesamplehour h WHERE h.device_id = d.id
                    AND h.hour >= %(start)s AND h.hour < least(%(end)s, (SELECT at FROM f)) OFFSET 0)
      OR EXISTS (SELECT 1 FROM inventory_devicesample x WHERE x.device_id = d.id
                    AND x.minute >= greatest(%(start)s, (SELECT at FROM f)) AND x.minute < %(end)s OFFSET 0))
), b AS (
  {{bookings_used}}
   WHERE true {{scoped}}
), used_hours AS (
  -- Folded hours: a whole hour inside the booking counts whole; one it covers in part counts as
  -- that part of the hour, but only once its raw minutes are gone (before that, used_raw reads them).
  SELECT {{keys}}, date_trunc(%(bucket)s, h.hour) AS lo,
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
   GROUP BY {{keys}}, date_trunc(%(bucket)s, h.hour)
), used_raw AS (
  -- Raw minutes: what is not folded yet, and the part-covered first and last hours while kept.
  -- Bounds, not `held @> minute`: the (device, minute) key serves a range, not a containment.
  SELECT {{keys}}, date_trunc(%(bucket)s, x.minute) AS lo, sum(x.gpu_percent) / 100.0 / 60 AS hours
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
     -- Only a booking that reaches past the fold or into the raw horizon has raw minutes to read.
     AND upper(b.held) > least(%(raw)s, (SELECT at FROM f))
   GROUP BY {{keys}}, date_trunc(%(bucket)s, x.minute)
), used AS (
  SELECT {{keys}}, lo, sum(hours) AS hours
    FROM (SELECT * FROM used_hours UNION ALL SELECT * FROM used_raw) u
   GROUP BY {{keys}}, lo
)
SELECT {{keys_out}}, booked.lo, coalesce(booked.hours, 0), coalesce(booked.ahead, 0), coalesce(booked.lent, 0),
       coalesce(used.hours, 0)
  FROM booked LEFT JOIN used USING ({{keys_using}}, lo)
 ORDER BY booked.lo, {{keys_order}}
 LIMIT %(limit)s
"""


@dataclass(frozen=True)
class UsageRow:
    """One group's GPU-hours in one bucket: booked to date, booked ahead (after now) and used."""

    keys: dict[str, str]
    bucket: datetime
    booked: float
    used: float
    ahead: float = 0.0
    lent: float = 0.0  # of `booked`, the hours spot work ran on idle owners' lent GPUs

    def as_dict(self) -> dict:
        return {
            **{KEY_NAMES[k]: v for k, v in self.keys.items()},
            "bucket": self.bucket.date().isoformat(),
            "gpuHoursBooked": round(self.booked, 3),
            "gpuHoursUsed": round(self.used, 3),
            "gpuHoursBookedAhead": round(self.ahead, 3),
            "gpuHoursLent": round(self.lent, 3),
        }


def usage_period(first: str | None, last: str | None, *, now: datetime, days: int) -> tuple[date, date]:
    """Read `from` and `to` as whole UTC days, `to` included; by default the `days` days up to today."""
    last_day = parse_day(last, "to") if last else now.astimezone(UTC).date()
    if last_day >= date.max:
        raise CapacityError(INVALID_INPUT, f"to: at most {date.max - timedelta(days=1)}")
    first_day = parse_day(first, "from") if first else last_day - timedelta(days=days - 1)
    return first_day, last_day


def usage_report(
    first: date,
    last: date,
    group_by: list[str],
    bucket: str,
    scope: Scope,
    now: datetime | None = None,
) -> list[UsageRow]:
    """Return GPU-hours booked and used per group and bucket from the day `first` to `last`, both whole."""
    if last < first:
        raise CapacityError(INVALID_INPUT, f"to: must be on or after from ({first})")
    if (last - first).days + 1 > MAX_PERIOD.days:
        raise CapacityError(INVALID_INPUT, f"the period is at most {MAX_PERIOD.days} days")
    if bucket not in BUCKETS:
        raise CapacityError(INVALID_INPUT, f"bucket: one of {', '.join(BUCKETS)}")
    if not group_by or any(g not in GROUPS for g in group_by) or len(set(group_by)) != len(group_by):
        raise CapacityError(INVALID_INPUT, f"groupBy: one or more of {', '.join(GROUPS)}, each once")
    now = now or timezone.now()
    keys = [f"g_{g}" for g in group_by]
    columns = ", ".join(f"{GROUPS[g]} AS g_{g}" for g in group_by)
    share = gpus_sql("bk")
    sql = _SQL.format(
        kept_columns=", ".join(f"{KEPT_GROUPS[g]} AS g_{g}" for g in group_by),
        bookings_used=_BOOKINGS.format(
            columns=columns, share=share, window="tstzrange(%(start)s, %(end)s)", source=_SAMPLED_BOOKINGS
        ),
        scoped="" if scope.sees_every_tenant else "AND t.slug = ANY(%(tenants)s)",
        keys=", ".join(keys),
        keys_out=", ".join(f"booked.{k}" for k in keys),
        keys_using=", ".join(keys),
        keys_order=", ".join(f"booked.{k}" for k in keys),
    )
    start = datetime.combine(first, time(), tzinfo=UTC)
    end = datetime.combine(last + timedelta(days=1), time(), tzinfo=UTC)
    # Today (UTC) is split at now: before it booked to date, after it ahead (nothing outside the period).
    today = now.astimezone(UTC).date()
    params = {
        **to_date_params(now, in_period=first <= today <= last),
        "start": start,
        "end": end,
        "first": first,
        "last": last,
        "now": now,
        "bucket": bucket,
        "step": f"1 {bucket}",
        "limit": MAX_ROWS,
        "tenants": sorted(scope.tenants or ()),
        "raw": raw_horizon(now),
    }
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return [
            UsageRow(
                dict(zip(group_by, row[: len(keys)], strict=True)),
                row[len(keys)],
                float(row[-4]),
                float(row[-1]),
                float(row[-3]),
                float(row[-2]),
            )
            for row in cur.fetchall()
        ]
