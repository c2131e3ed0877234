"""How much of what a reservation booked was used: from the devices' per-minute samples.

A reservation's samples are its booked devices' samples inside each booking's window (a released
booking is cut at the release). `usage` is null before the first sample. Samples come from whole
GPUs (nvidia-smi reports no utilization per MIG slice), so a reservation of slices alone has none.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

_USAGE_SQL = """
WITH s AS (
  SELECT a.reservation_id AS rid, x.minute, x.gpu_percent, x.processes
    FROM capacity_allocation a
    JOIN capacity_devicebooking b ON b.allocation_id = a.id
    JOIN inventory_devicesample x
      -- A sample stands for its whole minute: one that overlaps the booking counts.
      ON x.device_id = b.device_id AND x.minute > lower(b.during) - interval '1 minute'
     AND x.minute < upper(b.during)
   WHERE a.reservation_id = ANY(%s)
), idle AS (
  SELECT rid, count(*) AS minutes FROM (
    SELECT rid, minute FROM s GROUP BY rid, minute HAVING sum(processes) = 0) m
   GROUP BY rid
)
SELECT s.rid, avg(s.gpu_percent), percentile_cont(0.95) WITHIN GROUP (ORDER BY s.gpu_percent),
       coalesce(max(idle.minutes), 0), count(*)
  FROM s LEFT JOIN idle ON idle.rid = s.rid
 GROUP BY s.rid
"""


def usage_for(reservation_ids: Iterable[int]) -> dict[int, dict]:
    """Return per reservation id with samples: mean and p95 GPU %, minutes with no process, samples."""
    ids = list(reservation_ids)
    if not ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(_USAGE_SQL, [ids])
        return {
            rid: {
                "gpuPercentMean": round(float(mean), 1) if mean is not None else None,
                "gpuPercentP95": round(float(p95), 1) if p95 is not None else None,
                "minutesWithoutProcess": int(idle),
                "samples": int(samples),
            }
            for rid, mean, p95, idle, samples in cur.fetchall()
        }
