"""Fold raw utilization minutes into hourly rows, and let old ones go.

usage's worker job (usage/jobs.py) calls `fold_samples`. Each hour is folded once it is over (two
minutes' grace for a report that was written as the hour turned), at most a day of hours per call
so that a worker back from a long stop catches up in bounded steps. Raw minutes older than
USAGE_RAW_DAYS go only once folded; hourly rows go after USAGE_HOURLY_DAYS. One row (SampleFold),
locked, says how far the fold has come, so two workers never fold the same hour at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from usage.models import SampleFold

HOUR = timedelta(hours=1)
GRACE = timedelta(minutes=2)
MAX_HOURS_PER_FOLD = 24

_FOLD_SQL = """
INSERT INTO inventory_devicesamplehour
       (device_id, hour, gpu_percent_sum, samples, minutes_without_process, memory_used_mib_max,
        process_mib_max)
SELECT device_id, date_trunc('hour', minute), coalesce(sum(gpu_percent), 0), count(gpu_percent),
       count(*) FILTER (WHERE processes = 0), max(memory_used_mib), coalesce(max(process_mib), 0)
  FROM inventory_devicesample
 WHERE minute >= %(start)s AND minute < %(until)s
 GROUP BY device_id, date_trunc('hour', minute)
    ON CONFLICT (device_id, hour) DO UPDATE SET
       gpu_percent_sum = excluded.gpu_percent_sum, samples = excluded.samples,
       minutes_without_process = excluded.minutes_without_process,
       memory_used_mib_max = excluded.memory_used_mib_max, process_mib_max = excluded.process_mib_max
"""


@dataclass(frozen=True)
class Folded:
    """What one fold did: the hours folded, hourly rows written, raw and hourly rows let go."""

    hours: int
    rows: int
    raw_pruned: int
    hourly_pruned: int


def hour_of(moment: datetime) -> datetime:
    """Return the start of moment's hour."""
    return moment.replace(minute=0, second=0, microsecond=0)


def raw_horizon(now: datetime) -> datetime:
    """Return the hour from which raw minutes are surely still kept."""
    return hour_of(now) - timedelta(days=settings.USAGE_RAW_DAYS)


def folded_until() -> datetime | None:
    """Return the hour before which every hour is folded (None before the first fold)."""
    return SampleFold.objects.values_list("folded_until", flat=True).first()


def fold_samples(now: datetime) -> Folded:
    """Fold the hours that are over into hourly rows, then drop raw and hourly rows past their time."""
    target = hour_of(now - GRACE)
    with transaction.atomic():
        fold = SampleFold.objects.select_for_update().first()
        if fold is None:
            # The first fold starts at the oldest raw minute (one scan, once).
            with connection.cursor() as cur:
                cur.execute("SELECT min(minute) FROM inventory_devicesample")
                oldest = cur.fetchone()[0]
            fold = SampleFold.objects.create(folded_until=hour_of(oldest) if oldest else target)
        start = fold.folded_until
        until = min(target, start + MAX_HOURS_PER_FOLD * HOUR)
        rows = 0
        if until > start:
            with connection.cursor() as cur:
                cur.execute(_FOLD_SQL, {"start": start, "until": until})
                rows = cur.rowcount
            fold.folded_until = until
            fold.save(update_fields=["folded_until"])
        with connection.cursor() as cur:
            # Never a raw minute that is not folded yet.
            cur.execute(
                "DELETE FROM inventory_devicesample WHERE minute < %s",
                [min(raw_horizon(now), fold.folded_until)],
            )
            raw_pruned = cur.rowcount
            cur.execute(
                "DELETE FROM inventory_devicesamplehour WHERE hour < %s",
                [hour_of(now) - timedelta(days=settings.USAGE_HOURLY_DAYS)],
            )
            hourly_pruned = cur.rowcount
    return Folded(max(0, (until - start) // HOUR), rows, raw_pruned, hourly_pruned)
