"""How much of what a reservation booked was used: from the devices' per-minute samples.

A reservation's samples are its booked devices' samples inside each booking's window (a released
booking is cut at the release). `usage` is null before the first sample. Samples come from whole
GPUs (nvidia-smi reports no utilization per MIG slice), so a reservation of slices alone has none.
Minutes older than the raw minutes kept (USAGE_RAW_DAYS) are read from the hourly fold, an hour
the booking held in part weighted by that part: the 95th percentile then counts each such hour's
mean once, and minutes with no process count each hour's fewest among the reservation's GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection
from django.utils import timezone

from inventory.samples import raw_horizon

_USAGE_SQL = """
WITH cut AS (
  -- Raw minutes from here on (all of them before the first fold), hourly rows before.
  SELECT least(%(raw)s, coalesce((SELECT folded_until FROM inventory_samplefold LIMIT 1),
                                 '-infinity'::timestamptz)) AS at
), bk AS (
  SELECT a.reservation_id AS rid, b.device_id, b.during
    FROM capacity_allocation a JOIN capacity_devicebooking b ON b.allocation_id = a.id
   WHERE a.reservation_id = ANY(%(ids)s)
), s AS (
  SELECT bk.rid, x.minute, x.gpu_percent, x.processes
    FROM bk JOIN inventory_devicesample x
      -- A sample stands for its whole minute: one that overlaps the booking counts.
      ON x.device_id = bk.device_id AND x.minute > lower(bk.during) - interval '1 minute'
     AND x.minute < upper(bk.during) AND x.minute >= (SELECT at FROM cut)
), h AS (
  -- Before the cut, hourly rows, each weighted by the part of its hour the booking held.
  SELECT bk.rid, h.hour, h.gpu_percent_sum, h.samples, h.minutes_without_process,
         extract(epoch FROM upper(bk.during * tstzrange(h.hour, h.hour + interval '1 hour'))
                          - lower(bk.during * tstzrange(h.hour, h.hour + interval '1 hour'))) / 3600 AS w
    FROM bk JOIN inventory_devicesamplehour h
      ON h.device_id = bk.device_id AND h.hour >= date_trunc('hour', lower(bk.during))
     AND h.hour < least(upper(bk.during), (SELECT at FROM cut))
), totals AS (
  SELECT rid, sum(pct) AS pct, sum(n) AS n, sum(rows) AS rows FROM (
    SELECT rid, sum(gpu_percent) AS pct, count(gpu_percent) AS n, count(*) AS rows FROM s GROUP BY rid
    UNION ALL
    SELECT rid, sum(gpu_percent_sum * w), sum(samples * w), sum(samples * w) FROM h GROUP BY rid
  ) t GROUP BY rid
), p95 AS (
  SELECT rid, percentile_cont(0.95) WITHIN GROUP (ORDER BY v) AS v FROM (
    SELECT rid, gpu_percent::float AS v FROM s
    UNION ALL
    SELECT rid, gpu_percent_sum::float / samples FROM h WHERE samples > 0 AND w > 0
  ) v GROUP BY rid
), idle AS (
  SELECT rid, sum(minutes) AS minutes FROM (
    SELECT rid, count(*) AS minutes FROM (
      SELECT rid, minute FROM s GROUP BY rid, minute HAVING sum(processes) = 0) m GROUP BY rid
    UNION ALL
    -- An hour's minutes with no process on any of the reservation's GPUs: at most its fewest.
    SELECT rid, sum(m) FROM (
      SELECT rid, hour, min(minutes_without_process * w) AS m FROM h GROUP BY rid, hour) hh GROUP BY rid
  ) i GROUP BY rid
)
SELECT totals.rid, CASE WHEN totals.n > 0 THEN totals.pct / totals.n END, p95.v,
       round(coalesce(idle.minutes, 0)), round(totals.rows)
  FROM totals LEFT JOIN p95 USING (rid) LEFT JOIN idle USING (rid)
 WHERE totals.rows > 0
"""


def usage_for(reservation_ids: Iterable[int], now: datetime | None = None) -> dict[int, dict]:
    """Return per reservation id with samples: mean and p95 GPU %, minutes with no process, samples."""
    ids = list(reservation_ids)
    if not ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(_USAGE_SQL, {"ids": ids, "raw": raw_horizon(now or timezone.now())})
        return {
            rid: {
                "gpuPercentMean": round(float(mean), 1) if mean is not None else None,
                "gpuPercentP95": round(float(p95), 1) if p95 is not None else None,
                "minutesWithoutProcess": int(idle),
                "samples": int(samples),
            }
            for rid, mean, p95, idle, samples in cur.fetchall()
        }
