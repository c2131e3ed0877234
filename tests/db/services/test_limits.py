"""The pool policy's limits against the database: MIG slices count their share, earliest-start stays within maxLeadTime."""

from datetime import timedelta

import pytest

from capacity.models import DeviceBooking, Reservation
from capacity.placement import CapacityError
from capacity.services.earliest_start import earliest
from inventory.models import Device
from policy.limits import future_gpu_hours
from policy.pool_policy import set_policy

from booking import HOUR, MS, NOW, ask, config, reserve

pytestmark = pytest.mark.django_db


def sliced_node(make_node):
    """node-a: GPU0 split into MIG-0, MIG-1 (mig-3g.40gb: 3/7 of a GPU each)."""
    from capacity.rollups import refresh_rollups

    node = make_node("node-a", gpus=1)
    parent = Device.objects.get(node=node)
    for i in range(2):
        Device.objects.create(node=node, uuid=f"MIG-{i}", device_class="mig-3g.40gb", parent=parent, index=i)
    refresh_rollups([node.pool_id])
    return node


def test_max_future_gpu_hours_counts_a_mig_slice_as_its_share(tenant, make_node):
    node = sliced_node(make_node)
    slices = {**ask(1, hours=7), "devices": [{"class": "mig-3g.40gb", "count": 2}]}
    first = reserve(slices).reservation
    assert first.status == "placed"
    # Two 3/7 slices for 7 hours: 6 whole-GPU-hours, not 14.
    assert future_gpu_hours(tenant.pk, node.pool_id, NOW) == pytest.approx(6)
    # Only what is not yet past counts.
    assert future_gpu_hours(tenant.pk, node.pool_id, NOW + timedelta(hours=3.5)) == pytest.approx(3)
    set_policy("lab-pool", {"max_future_gpu_hours": 10})
    with pytest.raises(CapacityError) as refused:
        reserve({**ask(1, start=7, hours=7), "devices": [{"class": "mig-3g.40gb", "count": 2}]})
    assert (refused.value.code, refused.value.message) == (
        "POLICY_LIMIT",
        "maxFutureGpuHours is 10; acme would hold 12",
    )
    assert Reservation.objects.count() == 1 and DeviceBooking.objects.count() == 2
    one = reserve({**ask(1, start=7, hours=7), "devices": [{"class": "mig-3g.40gb", "count": 1}]})
    assert one.reservation.status == "placed"  # 6 + 3 = 9


def test_earliest_start_never_proposes_a_start_past_max_lead_time(tenant, make_node):
    make_node("n1", gpus=1)
    reserve(ask(1, hours=48))  # the GPU is busy for two days
    found = earliest({**ask(1, hours=4), "horizon": "7d"}, now=NOW, config=config())
    assert found.fits and found.window.start == MS + 48 * HOUR
    set_policy("lab-pool", {"max_lead_time": timedelta(days=1)})
    clipped = earliest({**ask(1, hours=4), "horizon": "7d"}, now=NOW, config=config())
    assert not clipped.fits and clipped.window is None
    # Its own duration is the request's, whatever the policy: a free start inside the lead time is found.
    set_policy("lab-pool", {"max_lead_time": timedelta(days=3)})
    within = earliest({**ask(1, hours=4), "horizon": "7d"}, now=NOW, config=config())
    assert within.window.start == MS + 48 * HOUR and within.window.end == MS + 52 * HOUR


def test_earliest_start_of_a_window_past_max_lead_time_is_policy_limit(tenant, make_node):
    make_node("n1", gpus=1)
    set_policy("lab-pool", {"max_lead_time": timedelta(days=1), "max_duration": timedelta(days=2)})
    with pytest.raises(CapacityError) as late:
        earliest(ask(1, start=36, hours=4), now=NOW, config=config())
    assert late.value.message == "maxLeadTime is 1d; this starts in 36h"
    with pytest.raises(CapacityError) as long:
        earliest(ask(1, hours=49), now=NOW, config=config())
    assert long.value.message == "maxDuration is 2d; this asks 49h"


def test_a_kept_lookup_follows_a_limit_set_or_lifted_since(tenant, make_node):
    """The limits ride on the kept pool lookup: its digest goes stale when an operator changes them."""
    from capacity.services import lookups

    make_node("n1", gpus=4)
    lookups.forget_all()
    assert reserve(ask(1, hours=4)).reservation.status == "placed"  # kept: no limit
    set_policy("lab-pool", {"max_duration": timedelta(hours=2)})
    with pytest.raises(CapacityError) as refused:
        reserve(ask(1, hours=4))
    assert refused.value.message == "maxDuration is 2h; this asks 4h"
    set_policy("lab-pool", {"max_duration": None})
    assert reserve(ask(1, hours=4)).reservation.status == "placed"
    assert Reservation.objects.count() == 2


def test_a_pending_booking_placed_by_the_retry_is_held_to_max_future_gpu_hours_and_waits(tenant, make_node):
    from capacity import services
    from inventory.models import Pool

    make_node("node-a", gpus=2)
    first = reserve(ask(2, hours=24)).reservation  # 48 GPU-hours
    extra = reserve(ask(1, start=24, hours=24)).reservation  # 24 more, the day after
    later = reserve(ask(2, hours=24)).reservation  # no room: pending
    assert later.status == "pending"
    set_policy("lab-pool", {"max_future_gpu_hours": 60})
    pool = Pool.objects.get(slug="lab-pool").pk
    services.release(first.pk, now=NOW)  # room again; acme holds 24
    assert services.retry_pending([pool], config=config(), now=NOW) == 0  # 24 + 48 > 60
    waiting = Reservation.objects.get(pk=later.pk)
    assert (
        waiting.status == "pending"
        and not DeviceBooking.objects.filter(allocation__reservation=waiting).exists()
    )
    said = waiting.condition("Unschedulable")
    assert (said["reason"], said["message"]) == ("PolicyLimit", "maxFutureGpuHours is 60; acme would hold 72")
    services.release(extra.pk, now=NOW)
    assert services.retry_pending([pool], config=config(), now=NOW) == 1  # 48: within
    assert Reservation.objects.get(pk=later.pk).status == "placed"


def test_the_pool_lease_placer_places_inline_where_max_future_gpu_hours_is_set(tenant, make_node):
    make_node("node-a", gpus=2)
    from capacity import services

    def queue(data):
        return services.reserve(data, now=NOW, config=config(placer="pool-lease")).reservation

    assert queue(ask(1)).condition("Queued") is not None  # no limit: queued for a batch
    set_policy("lab-pool", {"max_future_gpu_hours": 30})
    assert queue(ask(1, start=24)).status == "placed"  # counted at once, under the tenant's quota lock
    with pytest.raises(CapacityError) as refused:
        queue(ask(1, start=48))
    assert refused.value.message == "maxFutureGpuHours is 30; acme would hold 48"


def test_a_pool_that_sets_no_rule_runs_none_and_sends_no_statement_for_them(tenant, make_node, monkeypatch):
    """With no rule set, booking calls no rule's code and sends what it sends with none registered."""
    import dataclasses

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from capacity import rules

    make_node("n1", gpus=8)
    reserve(ask(1))  # warm-up: the first one creates the quota usage row
    called = []

    def counted(rule):
        def wrap(point, run):
            return None if run is None else (lambda *a: called.append((rule.name, point)) or run(*a))

        return dataclasses.replace(rule, **{p: wrap(p, getattr(rule, p)) for p in ("before_lock", "placed")})

    monkeypatch.setattr(
        rules, "_AT", {p: tuple(counted(r) for r in f) for p, f in rules.registered().items()}
    )
    with CaptureQueriesContext(connection) as with_rules:
        assert reserve(ask(1)).reservation.status == "placed"
    assert called == []
    saved = rules._AT
    monkeypatch.setattr(rules, "_AT", {point: () for point in rules.POINTS})
    with CaptureQueriesContext(connection) as without:
        assert reserve(ask(1)).reservation.status == "placed"
    assert len(with_rules.captured_queries) == len(without.captured_queries)
    # Once the pool sets a limit, its rules run (the counting above would have seen them).
    monkeypatch.setattr(rules, "_AT", saved)
    set_policy("lab-pool", {"max_duration": timedelta(days=1), "max_future_gpu_hours": 10**6})
    assert reserve(ask(1)).reservation.status == "placed"
    assert called == [("limits.window", "before_lock"), ("limits.future-gpu-hours", "placed")]
