"""Approvals in the placers: a booking above approvalAboveGpuHours is held whichever placer places it."""

import dataclasses

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from capacity.placers.batch import place_batch
from inventory.models import Pool
from policy.pool_policy import set_policy

from booking import NOW, ask


def cfg(**kw):
    return dataclasses.replace(placer_config(), random=None, **kw)


def test_the_pool_lease_batch_holds_a_booking_above_the_limit_and_not_one_below(tenant, make_node):
    make_node("node-a", gpus=4)
    set_policy("lab-pool", {"approval_above_gpu_hours": 48})
    big = services.reserve(ask(3, hours=24), config=cfg(placer="pool-lease"), now=NOW).reservation  # 72
    small = services.reserve(ask(1, hours=24), config=cfg(placer="pool-lease"), now=NOW).reservation  # 24
    assert big.status == "pending" and small.status == "pending"  # queued
    result = place_batch(Pool.objects.get(slug="lab-pool").pk, cfg(placer="pool-lease"), now=NOW)
    assert sorted(result.placed) == sorted([big.pk, small.pk])
    held = Reservation.objects.get(pk=big.pk).condition("AwaitingApproval")
    assert held is not None and held["gpuHours"] == 72, held
    assert held["holdUntil"] == "2026-12-03T12:00:00Z"
    assert Reservation.objects.get(pk=small.pk).condition("AwaitingApproval") is None


def test_a_pending_booking_placed_later_by_the_retry_is_held_then(tenant, make_node):
    make_node("node-a", gpus=2)
    first = services.reserve(ask(2, hours=24), config=cfg(), now=NOW).reservation
    set_policy("lab-pool", {"approval_above_gpu_hours": 10})
    assert first.condition("AwaitingApproval") is None  # placed before the policy
    later = services.reserve(ask(2, hours=24), config=cfg(), now=NOW).reservation
    assert later.status == "pending"
    services.release(first.pk, now=NOW)
    assert services.retry_pending([Pool.objects.get(slug="lab-pool").pk], config=cfg(), now=NOW) == 1
    row = Reservation.objects.get(pk=later.pk)
    assert row.status == "placed" and row.condition("AwaitingApproval") is not None
