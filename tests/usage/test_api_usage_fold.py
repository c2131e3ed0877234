"""The hourly fold: a report gives the same used hours before and after it, and old raw minutes go.

lab: node-a and node-b, 4 GPUs each, in lab-pool; acme books 2 GPUs from h0+30 min to h0+2 h 30 min:

    minute   h0 ........ h0+30 ........ h0+1h ........ h0+2h ........ h0+2h30 ........ h0+3h
    GPU %    100 (no booking) | 40 (booked) ............................. | 100 (no booking)
"""

from datetime import UTC, datetime, timedelta

from capacity.access import Scope
from capacity.models import DeviceBooking
from inventory.models import DeviceSample
from usage.figures import usage_for
from usage.folds import fold_samples
from usage.models import DeviceSampleHour
from usage.report import usage_report


def booked_and_sampled(as_acme, ask):
    h0 = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    start, end = h0 + timedelta(minutes=30), h0 + timedelta(hours=2, minutes=30)
    body = {**ask(2), "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)}}
    body.pop("duration")
    held = as_acme.post("/api/v1/reservations", body, format="json").json()
    assert held["status"] == "placed"
    devices = DeviceBooking.objects.filter(allocation__reservation_id=held["id"]).values_list(
        "device_id", flat=True
    )
    DeviceSample.objects.bulk_create(
        DeviceSample(device_id=d, minute=h0 + timedelta(minutes=m), gpu_percent=40 if 30 <= m < 150 else 100)
        for d in devices
        for m in range(180)
    )
    return held["id"], h0


def used(h0, now):
    first, last = (h0 - timedelta(days=1)).date(), (h0 + timedelta(days=1)).date()
    rows = usage_report(first, last, ["tenant"], "month", Scope(), now=now)
    # Booked in all: to date and ahead (asked before the booking starts, all of it is ahead).
    return round(sum(r.used for r in rows), 3), round(sum(r.booked + r.ahead for r in rows), 3)


def test_folding_keeps_the_used_hours_exact_while_raw_minutes_are_kept(as_acme, lab, ask):
    rid, h0 = booked_and_sampled(as_acme, ask)
    before = used(h0, now=None)
    # 2 GPUs x 120 booked minutes x 40 %: 1.6 GPU-hours used (the 100 % outside the booking is not theirs).
    assert before == (1.6, 4.0)
    assert usage_for([rid])[rid]["gpuPercentMean"] == 40.0

    folded = fold_samples(h0 + timedelta(hours=3, minutes=5))
    assert (folded.hours, folded.rows, folded.raw_pruned) == (3, 6, 0)
    hour = DeviceSampleHour.objects.order_by("hour").first()
    assert (hour.hour, hour.samples, hour.gpu_percent_sum) == (h0, 60, 30 * 100 + 30 * 40)
    assert used(h0, now=None) == before
    # The same as from raw minutes (the samples name no process: 120 minutes without one).
    assert usage_for([rid])[rid] == {
        "gpuPercentMean": 40.0,
        "gpuPercentP95": 40.0,
        "minutesWithoutProcess": 120,
        "samples": 240,
    }
    # A second fold in the same hour has nothing to fold.
    assert fold_samples(h0 + timedelta(hours=3, minutes=10)).hours == 0


def test_once_raw_minutes_are_gone_part_covered_hours_count_their_share(as_acme, lab, ask, settings):
    rid, h0 = booked_and_sampled(as_acme, ask)
    fold_samples(h0 + timedelta(hours=3, minutes=5))
    later = h0 + timedelta(days=settings.USAGE_RAW_DAYS + 1)
    gone = fold_samples(later)
    assert gone.raw_pruned == 2 * 180 and not DeviceSample.objects.exists()
    # Per GPU: half of hour 0 (30 x 100 + 30 x 40 = 4,200 %-minutes), all of hour 1 (2,400), half of
    # hour 2 (4,200): 2,100 + 2,400 + 2,100 = 6,600 %-minutes = 1.1 GPU-hours; 2.2 for both.
    assert used(h0, now=later) == (2.2, 4.0)
    usage = usage_for([rid], now=later)[rid]
    assert usage["gpuPercentMean"] == 55.0 and usage["samples"] == 240
    # Hourly rows go after USAGE_HOURLY_DAYS.
    assert fold_samples(h0 + timedelta(days=settings.USAGE_HOURLY_DAYS + 1)).hourly_pruned == 6
