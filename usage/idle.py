"""Idle bookings: running reservations whose GPUs did almost nothing for hours, named with the evidence.

A placed reservation that has run for at least IDLE_AFTER, whose booked devices' samples over the
last IDLE_AFTER average under IDLE_GPU_PERCENT, and whose samples cover at least half of those
device-minutes (silence is not idleness: a node whose agent stopped says nothing), gets the
condition `Idle` ("GPUs 0–7 at 1 % mean since 10:02"). One that is busy again loses it. Spot
work and whole-node leases follow the same rule. With IDLE_RELEASE_AFTER set (off by default),
one still idle that long after it was marked is released, the evidence its reason. usage's worker
job runs this every few minutes (usage/jobs.py).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from capacity.models import Reservation
from capacity.models.reservations import IDLE
from capacity.services.release import release
from capacity.services.repair import atoms_text

_CANDIDATES_SQL = """
SELECT a.reservation_id, n.name, array_agg(DISTINCT d.uuid), avg(x.gpu_percent), count(x.gpu_percent),
       count(DISTINCT b.device_id)
  FROM capacity_reservation r
  JOIN capacity_allocation a ON a.reservation_id = r.id AND a.released_at IS NULL
  JOIN capacity_devicebooking b ON b.allocation_id = a.id AND b.during @> %(now)s::timestamptz
  JOIN inventory_device d ON d.id = b.device_id
  JOIN inventory_node n ON n.id = d.node_id
  LEFT JOIN inventory_devicesample x ON x.device_id = b.device_id AND x.minute >= %(since)s AND x.minute < %(now)s
 WHERE r.status = 'placed' AND r.starts_at <= %(since)s
 GROUP BY a.reservation_id, n.name
"""


def mark_idle(now: datetime) -> tuple[int, int]:
    """Give `Idle` to the running reservations idle for IDLE_AFTER and take it from busy ones.

    Return (newly idle, no longer idle).
    """
    after: timedelta = settings.IDLE_AFTER
    since = now - after
    minutes = after.total_seconds() / 60
    found: dict[int, list[tuple[str, list[str], float | None, int, int]]] = defaultdict(list)
    with connection.cursor() as cur:
        cur.execute(_CANDIDATES_SQL, {"now": now, "since": since})
        for rid, node, uuids, mean, samples, devices in cur.fetchall():
            found[rid].append((node, uuids, mean, samples, devices))
    idle: dict[int, str] = {}
    for rid, parts in found.items():
        samples = sum(p[3] for p in parts)
        devices = sum(p[4] for p in parts)
        if samples == 0 or samples < devices * minutes / 2:
            continue  # too few samples to say
        mean = sum((p[2] or 0) * p[3] for p in parts) / samples
        if mean < settings.IDLE_GPU_PERCENT:
            where = "; ".join(f"{node} {atoms_text(node, uuids)}" for node, uuids, *_ in parts)
            idle[rid] = f"{where} at {mean:.0f} % mean since {since:%H:%M} UTC"
    now_idle = set(
        Reservation.objects.filter(status="placed", conditions__contains=[{"type": IDLE}]).values_list(
            "pk", flat=True
        )
    )
    added = removed = 0
    for rid in sorted(set(idle) | now_idle):
        with transaction.atomic():
            reservation = Reservation.objects.select_for_update().filter(pk=rid, status="placed").first()
            if reservation is None:
                continue
            kept = [c for c in reservation.conditions if c.get("type") != IDLE]
            if rid in idle:
                if len(kept) != len(reservation.conditions):
                    continue  # already idle: the evidence stays as first said
                kept.append(
                    {
                        "type": IDLE,
                        "status": "True",
                        "reason": "LowUtilization",
                        "message": idle[rid],
                        "since": now.isoformat(),
                    }
                )
                added += 1
            elif len(kept) == len(reservation.conditions):
                continue
            else:
                removed += 1
            Reservation.objects.filter(pk=rid).update(conditions=kept, updated_at=now)
    _release_long_idle(idle, now)
    return added, removed


def _release_long_idle(idle: dict[int, str], now: datetime) -> list[int]:
    """With IDLE_RELEASE_AFTER set, release what has been Idle that long and still is; name the evidence."""
    after: timedelta | None = settings.IDLE_RELEASE_AFTER
    if after is None:
        return []
    released = []
    for reservation in Reservation.objects.filter(
        pk__in=list(idle), status="placed", conditions__contains=[{"type": IDLE}]
    ):
        condition = next(c for c in reservation.conditions if c.get("type") == IDLE)
        since = datetime.fromisoformat(condition.get("since") or now.isoformat())
        if now - since >= after:
            release(
                reservation.pk,
                now=now,
                reason=f"idle for {after}: {condition['message']}",
                by="idle policy",
                why="IdlePolicy",
            )
            released.append(reservation.pk)
    return released
