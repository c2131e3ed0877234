"""Use without a booking: processes on a GPU that no reservation holds at that minute.

A device's latest sample of the last RECENT minutes that shows processes while no booking of the
device, of its MIG slices or of its parent GPU overlaps that minute is unbooked use. The spell
started after the last minute (within LOOKBACK) that was booked or showed no process. usage's worker
job keeps one UnbookedUse row per such device: added when it starts (its insert is the
spell's `node.unbooked_use` event), refreshed while it lasts, removed when it ends. Operators read
them on the node page ("GPU 3: 2 processes, 41 GiB, since 10:02 UTC, no booking") and as
`berth_unbooked_use_devices`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection, transaction

from usage.models import UnbookedUse

RECENT = timedelta(minutes=5)
LOOKBACK = timedelta(hours=24)

# Bookings of the device itself, of its MIG slices, or of the GPU it is a slice of.
_HELD = """
EXISTS (SELECT 1 FROM capacity_devicebooking b
         WHERE b.during && tstzrange({minute}, {minute} + interval '1 minute')
           AND b.device_id IN (SELECT e.id FROM inventory_device e WHERE e.id = {device} OR e.parent_id = {device}
                               UNION ALL
                               SELECT e.parent_id FROM inventory_device e WHERE e.id = {device}))
"""

_FIND_SQL = f"""
WITH latest AS (
  SELECT DISTINCT ON (x.device_id) x.device_id, x.minute, x.processes, x.process_mib
    FROM inventory_devicesample x
   WHERE x.minute >= %(recent)s AND x.minute <= %(now)s
   ORDER BY x.device_id, x.minute DESC
), hits AS (
  SELECT l.* FROM latest l
   WHERE l.processes > 0 AND NOT {_HELD.format(minute="l.minute", device="l.device_id")}
)
SELECT h.device_id, d.node_id, d.device_class, d.index, h.minute, h.processes, h.process_mib,
       (SELECT min(y.minute) FROM inventory_devicesample y
         WHERE y.device_id = h.device_id AND y.minute <= h.minute
           AND y.minute > coalesce(
             (SELECT max(z.minute) FROM inventory_devicesample z
               WHERE z.device_id = h.device_id AND z.minute < h.minute AND z.minute >= %(lookback)s
                 AND (z.processes = 0 OR {_HELD.format(minute="z.minute", device="z.device_id")})),
             %(lookback)s - interval '1 minute'))
  FROM hits h JOIN inventory_device d ON d.id = h.device_id
"""


def describe(device_class: str, index: int, processes: int, mib: int, since: datetime) -> str:
    """Say it as an operator reads it: "GPU 3: 2 processes, 41 GiB, since 10:02 UTC, no booking"."""
    what = "GPU" if device_class == "gpu" else device_class
    count = f"{processes} process{'es' if processes != 1 else ''}"
    return f"{what} {index}: {count}, {round(mib / 1024)} GiB, since {since:%H:%M} UTC, no booking"


def mark_unbooked_use(now: datetime) -> tuple[int, int]:
    """Add, refresh and remove UnbookedUse rows to match the latest samples; return (started, ended)."""
    with connection.cursor() as cur:
        cur.execute(_FIND_SQL, {"now": now, "recent": now - RECENT, "lookback": now - LOOKBACK})
        found = {row[0]: row for row in cur.fetchall()}
    with transaction.atomic():
        known = {u.device_id: u for u in UnbookedUse.objects.select_for_update()}
        ended = UnbookedUse.objects.filter(device_id__in=[d for d in known if d not in found]).delete()[0]
        started = 0
        for device, (_d, node, device_class, index, minute, processes, mib, since) in sorted(found.items()):
            row = known.get(device)
            since = row.since if row else since or minute
            message = describe(device_class, index, processes, mib, since)
            if row is None:
                UnbookedUse.objects.create(
                    device_id=device,
                    node_id=node,
                    since=since,
                    seen_at=minute,
                    processes=processes,
                    process_mib=mib,
                    message=message,
                )
                started += 1
            elif (row.seen_at, row.processes, row.process_mib) != (minute, processes, mib):
                UnbookedUse.objects.filter(pk=device).update(
                    seen_at=minute, processes=processes, process_mib=mib, message=message
                )
    return started, ended


def unbooked_use_on(node) -> list[str]:
    """Return what runs on a node's GPUs without a booking, as the node page says it."""
    return list(
        UnbookedUse.objects.filter(node=node).order_by("device__index").values_list("message", flat=True)
    )
