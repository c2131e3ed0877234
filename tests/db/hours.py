"""Helpers for booked-hours tests: the rollup's figures, and the same recounted exactly from the bookings."""

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

from capacity.gpu_hours import BookedDevice, allocation_sevenths
from capacity.models import AnyAllocation, AnyDeviceBooking, AnyReservation
from inventory.models import Device
from usage.models import GPU_HOUR, BookedHours, BookedHoursChange, BookedPoints, BookedPointsChange

DAY = timedelta(days=1)


def held() -> dict[int, tuple[str, int]]:
    """Return booking pk -> (model, sevenths): the model it kept when booked, its sevenths by the Python
    rule over its allocation's devices (capacity.gpu_hours); a deleted device's booking as it kept them."""
    devices = {d.pk: d for d in Device.objects.all()}
    bookings = list(AnyDeviceBooking.objects.all())
    per_allocation: dict = defaultdict(list)
    for b in bookings:
        if b.device_id in devices:
            d = devices[b.device_id]
            per_allocation[b.allocation_id].append(BookedDevice(d.pk, d.device_class, d.parent_id))
    rule = {a: allocation_sevenths(ds) for a, ds in per_allocation.items()}
    return {
        b.pk: (b.gpu_model, rule[b.allocation_id][b.device_id] if b.device_id in devices else b.gpu_sevenths)
        for b in bookings
    }


def recount() -> dict[tuple[int, int, str, date], tuple[Fraction, Fraction]]:
    """Return (tenant pk, pool pk, model, UTC day) -> (GPU-hours booked, of them lent), exactly."""
    reservations = {r.pk: (r.tenant_id, r.pool_id) for r in AnyReservation.objects.all()}
    allocations = dict(AnyAllocation.objects.values_list("pk", "reservation_id"))
    kept_by = held()
    out: dict = defaultdict(lambda: (Fraction(0), Fraction(0)))
    for b in AnyDeviceBooking.objects.all():
        reservation = allocations.get(b.allocation_id)
        if reservation is None:
            continue
        tenant, pool = reservations[reservation]
        model, sevenths = kept_by[b.pk]
        lo, hi = b.during.lower, b.during.upper
        day = lo.astimezone(UTC).date()
        while datetime.combine(day, time(), tzinfo=UTC) < hi:
            start = max(lo, datetime.combine(day, time(), tzinfo=UTC))
            end = min(hi, datetime.combine(day + DAY, time(), tzinfo=UTC))
            hours = Fraction(sevenths, 7) * Fraction(
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


US = timedelta(microseconds=1)
HOUR_US = 3_600_000_000


def pieces():
    """Yield each booking's piece of each UTC day: (tenant, pool, model, day, layer, sevenths, lo µs, hi µs)."""
    reservations = {r.pk: (r.tenant_id, r.pool_id) for r in AnyReservation.objects.all()}
    allocations = dict(AnyAllocation.objects.values_list("pk", "reservation_id"))
    kept_by = held()
    for b in AnyDeviceBooking.objects.all():
        reservation = allocations.get(b.allocation_id)
        if reservation is None or b.during.isempty:
            continue
        tenant, pool = reservations[reservation]
        model, sevenths = kept_by[b.pk]
        lo, hi = b.during.lower, b.during.upper
        day = lo.astimezone(UTC).date()
        while (midnight := datetime.combine(day, time(), tzinfo=UTC)) < hi:
            start, end = max(lo, midnight) - midnight, min(hi, midnight + DAY) - midnight
            yield tenant, pool, model, day, b.layer, sevenths, start // US, end // US
            day += DAY


def recount_points() -> dict[tuple, tuple[int, int, int, int]]:
    """Return (tenant, pool, model, day, hour) -> (share, moment, lent share, lent moment), recounted exactly."""
    out: dict = defaultdict(lambda: (0, 0, 0, 0))
    for tenant, pool, model, day, layer, sevenths, lo, hi in pieces():
        for sign, x in ((-1, lo), (1, hi)):
            if x == 0:
                continue  # a point at midnight counts nothing at any now
            share, moment = sign * sevenths, sign * sevenths * x
            lent = (share, moment) if layer == 1 else (0, 0)
            key = (tenant, pool, model, day, x // HOUR_US)
            out[key] = tuple(a + b for a, b in zip(out[key], (share, moment, *lent), strict=True))
    return {k: v for k, v in out.items() if any(v)}


def kept_points() -> dict[tuple, tuple[int, int, int, int]]:
    """Return the booked points kept per key, day and hour: folded rows plus the changes not folded yet."""
    out: dict = defaultdict(lambda: (0, 0, 0, 0))
    for model in (BookedPoints, BookedPointsChange):
        for row in model.objects.all():
            key = (row.tenant_id, row.pool_id, row.gpu_model, row.day, row.hour)
            figures = (row.share, row.moment, row.lent_share, row.lent_moment)
            out[key] = tuple(a + b for a, b in zip(out[key], figures, strict=True))
    return {k: v for k, v in out.items() if any(v)}


def recount_to_date(now: datetime) -> dict[tuple[int, int, str], tuple[int, int]]:
    """Return (tenant, pool, model) -> (booked before now on now's UTC day, of it lent), × GPU_HOUR, exactly."""
    today = now.astimezone(UTC).date()
    at = (now - datetime.combine(today, time(), tzinfo=UTC)) // US
    out: dict = defaultdict(lambda: (0, 0))
    for tenant, pool, model, day, layer, sevenths, lo, hi in pieces():
        if day == today:
            before = sevenths * (min(hi, at) - min(lo, at))
            booked, lent = out[(tenant, pool, model)]
            out[(tenant, pool, model)] = (booked + before, lent + (before if layer == 1 else 0))
    return {k: v for k, v in out.items() if any(v)}
