"""Helpers for booked-hours tests: the rollup's figures, and the same recounted exactly from the bookings."""

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

from capacity.models import AnyAllocation, AnyDeviceBooking, AnyReservation, BookedHours, BookedHoursChange
from capacity.models.rollups import GPU_HOUR
from inventory.gpu_share import gpu_share
from inventory.models import Device

DAY = timedelta(days=1)


def recount() -> dict[tuple[int, int, str, date], tuple[Fraction, Fraction]]:
    """Return (tenant pk, pool pk, model, UTC day) -> (GPU-hours booked, of them lent), exactly."""
    reservations = {r.pk: (r.tenant_id, r.pool_id) for r in AnyReservation.objects.all()}
    allocations = dict(AnyAllocation.objects.values_list("pk", "reservation_id"))
    devices = {d.pk: d for d in Device.objects.all()}
    out: dict = defaultdict(lambda: (Fraction(0), Fraction(0)))
    for b in AnyDeviceBooking.objects.all():
        reservation = allocations.get(b.allocation_id)
        if reservation is None:
            continue
        tenant, pool = reservations[reservation]
        device = devices.get(b.device_id)
        if device is None:  # deleted: the report joins no device, so counts nothing
            continue
        model = ((device.attributes or {}).get("productName") or device.device_class)[
            :200
        ]  # as the rollup keeps it
        lo, hi = b.during.lower, b.during.upper
        day = lo.astimezone(UTC).date()
        while datetime.combine(day, time(), tzinfo=UTC) < hi:
            start = max(lo, datetime.combine(day, time(), tzinfo=UTC))
            end = min(hi, datetime.combine(day + DAY, time(), tzinfo=UTC))
            hours = gpu_share(device.device_class) * Fraction(
                (end - start) // timedelta(microseconds=1), 3_600_000_000
            )
            booked, lent = out[(tenant, pool, model, day)]
            out[(tenant, pool, model, day)] = (booked + hours, lent + (hours if b.layer == 1 else 0))
            day += DAY
    return {k: v for k, v in out.items() if v[0]}


def kept() -> dict[tuple[int, int, str, date], tuple[Fraction, Fraction]]:
    """Return the rollup's figures per key: folded rows plus the changes not folded yet."""
    out: dict = defaultdict(lambda: (0, 0))
    for model in (BookedHours, BookedHoursChange):
        for row in model.objects.all():
            key = (row.tenant_id, row.pool_id, row.gpu_model, row.day)
            booked, lent = out[key]
            out[key] = (booked + row.booked, lent + row.lent)
    return {k: (Fraction(b, GPU_HOUR), Fraction(lent, GPU_HOUR)) for k, (b, lent) in out.items() if b}
