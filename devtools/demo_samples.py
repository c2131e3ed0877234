"""GPU use for the demo: what the running demo bookings' nodes would have reported, and one stray job.

demo-now-1 (acme, 8 GPUs) trains: 70-95 % with a dip while it checkpoints every hour.
demo-now-2 (acme, 4 GPUs) sat idle for its two hours: 0-2 %, so the worker's check marks it Idle.
demo-now-4 (globex, 4 GPUs of an A100 box) runs at a steady 40-60 %.
A free H100 in h100-prod runs two processes that no reservation holds for the last 40 minutes.
Samples are per minute, for at most the last six hours, written by the first seed only.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.utils import timezone

from capacity.models import DeviceBooking, Reservation
from inventory.models import Device, DeviceSample
from usage.idle import mark_idle
from usage.unbooked import mark_unbooked_use

HORIZON = timedelta(hours=6)


def _pattern(key: str, minute: int, gpu: int) -> int:
    if key == "demo-now-1":
        dip = 30 if minute % 60 < 4 else 0  # the hourly checkpoint
        return max(0, min(100, round(82 + 12 * math.sin((minute + 7 * gpu) / 9) - dip)))
    if key == "demo-now-2":
        return (minute + gpu) % 3
    return round(50 + 10 * math.sin((minute + 11 * gpu) / 23))


def build_samples(now: datetime | None = None) -> int:
    """Write the demo's samples up to this minute, mark idle and unbooked use; return rows written."""
    if DeviceSample.objects.exists():
        return 0  # seeded before: a second seed, a minute later, must change nothing
    now = (now or timezone.now()).replace(second=0, microsecond=0)
    rows: list[DeviceSample] = []
    busy: set[int] = set()
    for key in ("demo-now-1", "demo-now-2", "demo-now-4"):
        reservation = Reservation.objects.filter(idempotency_key=key, status="placed").first()
        if reservation is None:
            continue
        bookings = DeviceBooking.objects.filter(allocation__reservation=reservation).select_related("device")
        for booking in bookings:
            device = booking.device.parent or booking.device  # samples are per whole GPU
            busy.add(device.pk)
            start = max(booking.during.lower, now - HORIZON).replace(second=0, microsecond=0)
            for m in range(int((now - start).total_seconds() // 60)):
                pct = _pattern(key, m, device.index)
                rows.append(
                    DeviceSample(
                        device=device,
                        minute=start + timedelta(minutes=m),
                        gpu_percent=pct,
                        memory_used_mib=int(pct * 700),
                        processes=1 if pct > 5 else 0,
                        process_mib=int(pct * 700) if pct > 5 else 0,
                    )
                )
    stray = (
        Device.objects.filter(node__pool__slug="h100-prod", parent=None, device_class="gpu")
        .exclude(pk__in=DeviceBooking.objects.filter(during__contains=now).values("device_id"))
        .order_by("node__name", "-index")
        .first()
    )
    if stray is not None:
        rows.extend(
            DeviceSample(
                device=stray,
                minute=now - timedelta(minutes=m),
                gpu_percent=97,
                memory_used_mib=42_000,
                processes=2,
                process_mib=41_984,
            )
            for m in range(40)
        )
    written = len(DeviceSample.objects.bulk_create(rows, ignore_conflicts=True))
    mark_idle(now)
    mark_unbooked_use(now)
    return written
