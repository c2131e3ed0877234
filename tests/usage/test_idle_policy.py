"""A pool's idle policy: its own warning and release times, keepWhenIdle, and what the node's agent is told.

lab: node-a and node-b, 4 GPUs each, in lab-pool; other-pool (node-c, 4 GPUs) has no policy and keeps
the site's settings. The clock is moved forward; samples are written as node reports would write them.
"""

import dataclasses
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.assignments import assignments
from capacity import services
from capacity.conf import placer_config
from capacity.models import DeviceBooking, Reservation
from inventory.models import DeviceSample, Pool
from policy.approvals import approve
from policy.keep_when_idle import set_keep_when_idle
from policy.pool_policy import set_policy
from usage.idle import IDLE, mark_idle


@pytest.fixture
def other_pool(make_node, site, two_labelled_hosts):
    pool = Pool.objects.create(slug="other-pool", name="Other", site=site)
    make_node("node-c", gpus=4, pool=pool)
    return pool


@pytest.fixture
def book(tenant):
    config = dataclasses.replace(placer_config(), random=None)

    def reserve(gpus=4, pool="lab-pool", **extra):
        data = {
            "tenantId": "acme",
            "poolId": pool,
            "devices": [{"class": "gpu", "count": gpus}],
            "duration": "1d",
        }
        return services.reserve({**data, **extra}, config=config).reservation

    return reserve


@pytest.fixture(autouse=True)
def site_settings(settings):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER, settings.IDLE_GPU_PERCENT = timedelta(hours=2), None, 5


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
    return Reservation.objects.get(pk=reservation.pk).condition(IDLE)


def minute():
    return timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)


def test_a_pools_idle_warn_after_marks_its_bookings_sooner_and_a_pool_without_one_keeps_the_site_setting(
    other_pool, book
):
    set_policy("lab-pool", {"idle_warn_after": timedelta(minutes=30)})
    here, there = book(pool="lab-pool"), book(pool="other-pool")
    start = minute()
    samples(here, start, 40, 0)
    samples(there, start, 40, 0)
    now = start + timedelta(minutes=40)
    assert mark_idle(now) == (1, 0)
    said = idle_condition(here)
    assert said["message"].endswith(f"GPU 0–3 at 0 % mean since {now - timedelta(minutes=30):%H:%M} UTC")
    assert idle_condition(there) is None  # two hours of the site's setting are not over
    samples(there, start + timedelta(minutes=40), 90, 0)
    samples(here, start + timedelta(minutes=40), 90, 0)
    assert mark_idle(start + timedelta(minutes=130)) == (1, 0)
    assert idle_condition(there) is not None


def test_a_pool_whose_warning_is_off_marks_nothing_idle_and_takes_back_what_it_marked(
    two_labelled_hosts, book
):
    held = book()
    start = minute()
    samples(held, start, 200, 0)
    assert mark_idle(start + timedelta(minutes=130)) == (1, 0)
    set_policy("lab-pool", {"idle_warn_after": None, "idle_release_after": timedelta(minutes=1)})
    assert mark_idle(start + timedelta(minutes=140)) == (0, 1)
    assert idle_condition(held) is None
    assert Reservation.objects.get(pk=held.pk).status == "placed"


def test_still_idle_its_pools_idle_release_after_later_it_is_released_but_a_kept_booking_stays_idle(
    two_labelled_hosts, book
):
    set_policy(
        "lab-pool", {"idle_warn_after": timedelta(minutes=30), "idle_release_after": timedelta(hours=1)}
    )
    gone, kept = book(), book(keepWhenIdle=True)
    assert Reservation.objects.get(pk=kept.pk).keep_when_idle
    start = minute()
    samples(gone, start, 120, 0)
    samples(kept, start, 120, 0)
    marked = start + timedelta(minutes=31)
    assert mark_idle(marked) == (2, 0)
    mark_idle(marked + timedelta(minutes=59))
    assert Reservation.objects.get(pk=gone.pk).status == "placed"
    mark_idle(marked + timedelta(minutes=61))
    released = Reservation.objects.get(pk=gone.pk)
    assert released.status == "released"
    (said,) = released.conditions
    assert (said["type"], said["reason"]) == ("Released", "IdlePolicy")
    assert "idle for 1:00:00: node-" in said["message"] and "at 0 % mean" in said["message"]
    still = Reservation.objects.get(pk=kept.pk)
    assert still.status == "placed" and still.condition(IDLE) is not None


def test_a_booking_kept_later_by_its_owner_is_not_released_and_one_let_go_again_is(two_labelled_hosts, book):
    set_policy(
        "lab-pool", {"idle_warn_after": timedelta(minutes=30), "idle_release_after": timedelta(hours=1)}
    )
    held = book()
    start = minute()
    samples(held, start, 200, 0)
    marked = start + timedelta(minutes=31)
    mark_idle(marked)
    set_keep_when_idle(held.pk, True)
    mark_idle(marked + timedelta(minutes=90))
    assert Reservation.objects.get(pk=held.pk).status == "placed"
    set_keep_when_idle(held.pk, False)
    mark_idle(marked + timedelta(minutes=91))
    assert Reservation.objects.get(pk=held.pk).status == "released"


def test_the_node_agents_assignments_say_idle_with_when_it_goes_and_a_kept_one_never_goes(
    two_labelled_hosts, book
):
    set_policy(
        "lab-pool", {"idle_warn_after": timedelta(minutes=30), "idle_release_after": timedelta(hours=1)}
    )
    held = book()
    node = DeviceBooking.objects.filter(allocation__reservation=held).first().device.node.name
    body, before = assignments(node)
    assert {d["now"]["idle"] for d in body["devices"] if d["now"]} == {None}
    start = minute()
    samples(held, start, 40, 0)
    marked = start + timedelta(minutes=40)
    mark_idle(marked)
    body, after = assignments(node)
    assert after != before
    (_same,) = {str(d["now"]["idle"]) for d in body["devices"] if d["now"]}
    said = next(d["now"]["idle"] for d in body["devices"] if d["now"])
    assert said["since"] == marked.isoformat().replace("+00:00", "Z")
    assert said["releaseAt"] == (marked + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert said["keepWhenIdle"] is False and "at 0 % mean" in said["message"]
    set_keep_when_idle(held.pk, True)
    body, kept = assignments(node)
    said = next(d["now"]["idle"] for d in body["devices"] if d["now"])
    assert kept != after and said["keepWhenIdle"] is True and said["releaseAt"] is None


def test_the_metric_counts_idle_bookings_kept_when_idle_per_pool(two_labelled_hosts, book):
    from metrics.state import DatabaseCollector

    def gauge(name):
        family = next(f for f in DatabaseCollector().collect() if f.name == name)
        return {s.labels["pool"]: s.value for s in family.samples}

    set_policy("lab-pool", {"idle_warn_after": timedelta(minutes=30)})
    kept, other = book(keepWhenIdle=True), book()
    start = minute()
    samples(kept, start, 40, 0)
    samples(other, start, 40, 0)
    assert gauge("berth_idle_kept_reservations") == {"lab-pool": 0}
    mark_idle(start + timedelta(minutes=40))
    assert gauge("berth_idle_reservations") == {"lab-pool": 2}
    assert gauge("berth_idle_kept_reservations") == {"lab-pool": 1}


def test_a_booking_awaiting_approval_is_never_idle_and_an_approved_one_counts_from_its_approval(
    two_labelled_hosts, book
):
    set_policy("lab-pool", {"idle_warn_after": timedelta(minutes=30), "approval_above_gpu_hours": 10})
    held = book(gpus=4)  # 96 GPU-hours: awaits approval
    assert held.condition("AwaitingApproval") is not None
    start = minute()
    samples(held, start, 40, 0)
    assert mark_idle(start + timedelta(minutes=40)) == (0, 0)  # nothing could run on it
    assert idle_condition(held) is None
    approve(held.pk, by="op", operator=True, now=start + timedelta(minutes=40))
    samples(held, start + timedelta(minutes=40), 20, 0)
    assert mark_idle(start + timedelta(minutes=60)) == (0, 0)  # approved 20 minutes ago, not 30
    samples(held, start + timedelta(minutes=60), 15, 0)
    assert mark_idle(start + timedelta(minutes=75)) == (1, 0)
    assert idle_condition(held) is not None
