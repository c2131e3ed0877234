"""How much of what a reservation booked was used: from the devices' per-minute samples.

A reservation's samples are its booked devices' samples inside each booking's window (a released
booking is cut at the release). `usage` is null before the first sample. Samples come from whole
GPUs (nvidia-smi reports no utilization per MIG slice), so a reservation of slices alone has none.
Minutes older than the raw minutes kept (USAGE_RAW_DAYS) are read from the hourly fold, an hour
the booking held in part weighted by that part: the 95th percentile then counts each such hour's
mean once, and minutes with no process count each hour's fewest among the reservation's GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from usage.folds import raw_horizon

# The reservations' samples: raw minutes (`s`) from the cut on, hourly rows (`h`) before it.
_SAMPLES = """
WITH cut AS (
  -- Raw minutes from here on (all of them before the first fold), hourly rows before.
  SELECT least(%(raw)s, coalesce((SELECT folded_until FROM inventory_samplefold LIMIT 1),
                                 '-infinity'::timestamptz)) AS at
), bk AS (
  SELECT a.reservation_id AS rid, b.device_id, b.during
    FROM capacity_allocation_all a JOIN capacity_devicebooking_all b ON b.allocation_id = a.id
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
)"""

_USAGE_SQL = f"""{_SAMPLES}, totals AS (
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


_SERIES_SQL = f"""{_SAMPLES}, pts AS (
  SELECT floor(extract(epoch FROM minute - %(start)s) / %(step)s)::int AS i,
         sum(gpu_percent)::float AS pct, count(gpu_percent) AS n
    FROM s GROUP BY 1
  UNION ALL
  -- An hourly row lands in the point its hour starts in (points are never finer than the fold
  -- once the raw minutes are gone).
  SELECT floor(extract(epoch FROM hour - %(start)s) / %(step)s)::int, sum(gpu_percent_sum), sum(samples)
    FROM h GROUP BY 1
)
SELECT greatest(i, 0), sum(pct) / sum(n) FROM pts GROUP BY greatest(i, 0) HAVING sum(n) > 0 ORDER BY 1
"""

SERIES_POINTS = 120  # at most this many points: a minute each, or wider for a longer window


@dataclass(frozen=True)
class UsageSeries:
    """A reservation's mean GPU % over its window, one point per `step` (None where no sample)."""

    start: datetime
    end: datetime
    step: timedelta
    values: list[float | None]

    def lines(self, width: int = 600, height: int = 120) -> list[str]:
        """Return SVG polyline point lists, one per run of points with samples (gaps stay gaps)."""
        runs: list[list[str]] = [[]]
        span = max(len(self.values) - 1, 1)
        for i, value in enumerate(self.values):
            if value is None:
                runs.append([])
                continue
            runs[-1].append(f"{i * width / span:.1f},{height - value * height / 100:.1f}")
        return [" ".join(run) for run in runs if run]

    @property
    def step_text(self) -> str:
        """Return the step as people say it: "minute", "5 minutes", "2 hours"."""
        minutes = int(self.step.total_seconds() // 60)
        if minutes == 1:
            return "minute"
        if minutes % 60 == 0:
            return "hour" if minutes == 60 else f"{minutes // 60} hours"
        return f"{minutes} minutes"


def usage_series(reservation, now: datetime | None = None) -> UsageSeries | None:
    """Return the reservation's GPU % over its window so far (None before it starts or any sample)."""
    now = now or timezone.now()
    start = reservation.starts_at.replace(second=0, microsecond=0)
    end = min(reservation.released_at or reservation.ends_at, reservation.ends_at, now)
    if end <= start:
        return None
    minutes = max(1, math.ceil((end - start).total_seconds() / 60 / SERIES_POINTS))
    step = timedelta(minutes=minutes)
    count = max(1, math.ceil((end - start) / step))
    values: list[float | None] = [None] * count
    with connection.cursor() as cur:
        cur.execute(
            _SERIES_SQL,
            {
                "ids": [reservation.pk],
                "raw": raw_horizon(now),
                "start": start,
                "step": step.total_seconds(),
            },
        )
        for i, value in cur.fetchall():
            if i < count:  # samples past `end` (none yet, or after the window) are not drawn
                values[i] = round(float(value), 1)
    if all(v is None for v in values):
        return None
    return UsageSeries(start, end, step, values)
