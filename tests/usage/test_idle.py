"""Idle bookings: a running reservation whose GPUs did almost nothing for IDLE_AFTER reads Idle, with evidence.

lab: node-a and node-b, 4 GPUs each, in lab-pool. The clock is moved forward (a booking cannot
start hours in the past); samples are written as the node reports would have written them.
"""

import dataclasses
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import DeviceBooking, Reservation
from inventory.models import DeviceSample
from policy.reclaim import reclaim
from usage.idle import IDLE, mark_idle


@pytest.fixture
def book():
    config = dataclasses.replace(placer_config(), random=None)

    def reserve(gpus):
        data = {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": gpus}],
            "duration": "1d",
        }
        return services.reserve(data, config=config).reservation

    return reserve


def samples(reservation, start, minutes, percent):
    devices = DeviceBooking.objects.filter(allocation__reservation=reservation).values_list(
        "device_id", flat=True
    )
    DeviceSample.objects.bulk_create(
        DeviceSample(device_id=d, minute=start + timedelta(minutes=m), gpu_percent=percent, processes=1)
        for d in devices
        for m in range(minutes)
    )


def idle_condition(reservation):
    return next((c for c in Reservation.objects.get(pk=reservation.pk).conditions if c["type"] == IDLE), None)


def test_a_booking_idle_for_two_hours_reads_idle_with_the_evidence_and_loses_it_when_busy(
    two_labelled_hosts, tenant, book, settings
):
    settings.IDLE_AFTER, settings.IDLE_GPU_PERCENT = timedelta(hours=2), 5
    held = book(gpus=4)
    busy = book(gpus=4)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    samples(held, start, 130, 1)
    samples(busy, start, 130, 80)
    later = start + timedelta(minutes=130)
    assert mark_idle(later) == (1, 0)
    said = idle_condition(held)
    assert said["reason"] == "LowUtilization"
    assert said["message"].endswith(f"GPU 0–3 at 1 % mean since {later - timedelta(hours=2):%H:%M} UTC")
    assert idle_condition(busy) is None
    assert mark_idle(later) == (0, 0)  # once: the evidence stays as first said
    # The tenant's list marks it, the evidence in the badge's title; the busy one is not marked.
    from django.contrib.auth.models import User
    from django.test import Client

    alice = User.objects.create_user("alice")
    tenant.users.add(alice)
    page = Client()
    page.force_login(alice)
    html = page.get("/reservations/").text
    assert f'<span class="badge warn" title="Idle: {said["message"]}">◔ idle</span>' in html
    assert html.count("◔ idle") == 1
    samples(held, later, 120, 90)
    assert mark_idle(later + timedelta(minutes=120)) == (0, 1)
    assert idle_condition(held) is None


def test_silence_is_not_idleness_too_few_samples_say_nothing(two_labelled_hosts, tenant, book, settings):
    settings.IDLE_AFTER = timedelta(hours=2)
    held = book(gpus=4)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    samples(held, start, 50, 0)  # 50 of 120 minutes: its agent was mostly silent
    assert mark_idle(start + timedelta(minutes=121)) == (0, 0)
    assert idle_condition(held) is None


def test_the_metric_counts_idle_reservations_per_pool(two_labelled_hosts, tenant, book, settings):
    from metrics.state import DatabaseCollector

    def idle_gauge():
        family = next(f for f in DatabaseCollector().collect() if f.name == "berth_idle_reservations")
        return {s.labels["pool"]: s.value for s in family.samples}

    settings.IDLE_AFTER = timedelta(hours=2)
    held = book(gpus=4)
    assert idle_gauge() == {"lab-pool": 0}
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    samples(held, start, 121, 0)
    mark_idle(start + timedelta(minutes=121))
    assert idle_gauge() == {"lab-pool": 1}


def test_with_the_policy_on_a_booking_idle_that_long_is_released_naming_the_evidence(
    two_labelled_hosts, tenant, book, settings
):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER = timedelta(hours=2), timedelta(hours=1)
    held = book(gpus=4)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    samples(held, start, 200, 0)
    marked = start + timedelta(minutes=121)
    mark_idle(marked)
    mark_idle(marked + timedelta(minutes=30))
    assert Reservation.objects.get(pk=held.pk).status == "placed"  # idle for half the policy's hour
    mark_idle(marked + timedelta(minutes=61))
    gone = Reservation.objects.get(pk=held.pk)
    assert gone.status == "released"
    (said,) = gone.conditions
    assert (said["type"], said["reason"]) == ("Released", "IdlePolicy")
    assert (
        said["message"].startswith("idle policy: idle for 1:00:00: node-")
        and "GPU 0–3 at 0 % mean" in said["message"]
    )


def test_an_operator_releases_from_the_page_with_a_reason_the_tenant_reads(two_labelled_hosts, tenant, book):
    from django.contrib.auth.models import Group, User
    from django.test import Client

    held = book(gpus=1)
    ops = User.objects.create_user("ops")
    ops.groups.add(Group.objects.get_or_create(name="operators")[0])
    page = Client()
    page.force_login(ops)
    assert 'name="reason"' in page.get(f"/reservations/{held.pk}/release/").text
    page.post(f"/reservations/{held.pk}/release/", {"reason": "idle since Tuesday"})
    gone = Reservation.objects.get(pk=held.pk)
    assert gone.status == "released"
    assert gone.conditions == [
        {"type": "Released", "status": "True", "reason": "ByRequest", "message": "ops: idle since Tuesday"}
    ]
    assert "ops: idle since Tuesday" in page.get(f"/reservations/{held.pk}/").text


def test_an_owner_that_took_its_gpus_back_is_judged_only_on_samples_since(
    two_labelled_hosts, tenant, book, settings
):
    settings.IDLE_AFTER, settings.IDLE_GPU_PERCENT = timedelta(hours=2), 5
    held = book(gpus=4)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    samples(held, start, 250, 1)
    first = start + timedelta(minutes=130)
    assert mark_idle(first) == (1, 0)
    done = reclaim(held.pk, now=first + timedelta(minutes=1))
    assert done.preempted == () and idle_condition(held) is None
    [noted] = [c for c in Reservation.objects.get(pk=held.pk).conditions if c["type"] == "Reclaimed"]
    assert noted["message"].startswith("idle GPUs taken back at ") and noted["message"].endswith(
        "its owner asked"
    )
    # Five minutes on, two hours of quiet samples lie behind it, but most from before the reclaim.
    assert mark_idle(first + timedelta(minutes=6)) == (0, 0)
    assert idle_condition(held) is None
    # Two hours of quiet since the reclaim: idle again.
    assert mark_idle(first + timedelta(minutes=120 + 2)) == (1, 0)
    assert idle_condition(held) is not None
