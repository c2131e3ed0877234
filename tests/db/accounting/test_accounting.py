"""Accounting follows the clock: quota, scalar room and pool capacity mean what is true at that time."""

from datetime import timedelta

import pytest

from capacity import services
from capacity.models import Quota, QuotaCharge, Reservation, ScalarClaim
from capacity.placement import CapacityError, Window
from capacity.placers import quota
from inventory.models import NodeLabel

from booking import HOUR, MS, NOW, ask, booked_at, capacity, claimed, held, reserve


def limit(tenant, resource, value):
    Quota.objects.update_or_create(tenant=tenant, resource=resource, defaults={"limit": value})


def with_limits_label(node):
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    return node


def test_quota_bounds_what_is_held_at_once_not_the_sum_of_future_windows(tenant, make_node):
    """
    node-a, node-b: 8 GPUs each; acme may hold 8 GPUs at once.
    Three back-to-back 12-hour windows of 8 GPUs each fit; one overlapping two of them does not.
    """
    make_node("node-a", gpus=8)
    make_node("node-b", gpus=8)
    limit(tenant, "gpu", 8)
    for i in range(3):
        assert reserve(ask(8, start=24 + 12 * i, hours=12)).reservation.status == "placed"
    assert held("gpu", at=NOW) == 0
    assert held("gpu", at=NOW + timedelta(hours=30)) == 8
    with pytest.raises(CapacityError) as err:
        reserve(ask(1, start=30, hours=12))
    assert err.value.code == "QUOTA_EXCEEDED"
    assert err.value.message == "quota exceeded for acme: gpu 8 used + 1 requested > limit 8"
    # Before the first window nothing is held: the same GPU books today.
    assert reserve(ask(1, start=0, hours=12)).reservation.status == "placed"
    assert Reservation.objects.count() == 4 and QuotaCharge.objects.count() == 4


def test_a_resource_with_no_quota_row_and_no_default_is_refused_never_unlimited(make_node):
    """A tenant without a default ('*') row books nothing its rows do not name."""
    from tenants import make_tenant

    tenant = make_tenant("acme", default_quota=None)
    limit(tenant, "gpu", 4)
    node = make_node("node-a", gpus=1)
    from inventory.models import Device

    parent = node.devices.get()
    for i in range(7):
        Device.objects.create(node=node, uuid=f"MIG-{i}", device_class="mig-1g.10gb", parent=parent, index=i)
    slices = {**ask(1), "devices": [{"class": "mig-1g.10gb", "count": 7}]}
    with pytest.raises(CapacityError) as err:
        reserve(slices)
    assert err.value.code == "QUOTA_EXCEEDED"
    assert err.value.message == (
        "no quota set for acme: mig-1g.10gb has no limit and there is no default ('*'); an operator sets one"
        " on the team's page, Teams → acme"
    )
    assert not Reservation.objects.exists() and not QuotaCharge.objects.exists()
    # A default limit bounds every resource without a row of its own, MIG slices included.
    limit(tenant, "*", 5)
    with pytest.raises(CapacityError) as err:
        reserve(slices)
    assert err.value.message == "quota exceeded for acme: mig-1g.10gb 0 used + 7 requested > limit 5"
    assert (
        reserve({**slices, "devices": [{"class": "mig-1g.10gb", "count": 5}]}).reservation.status == "placed"
    )


def test_a_refused_retry_changes_nothing_and_says_quota_exceeded(tenant, other_tenant, make_node):
    """
    node-a: 4 GPUs, globex holds all 4 today.   node-b: 4 GPUs.   acme may hold 4 GPUs at once.
    acme's 4-GPU request waits for node-a; meanwhile acme books 2 GPUs on node-b. When globex
    releases, every retry is refused by quota: nothing is charged, however often it runs.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    limit(tenant, "gpu", 4)
    globex = reserve(ask(4, tenant="globex", excludeNodes=["node-b"])).reservation
    waiting = reserve(ask(4, excludeNodes=["node-b"])).reservation
    assert waiting.status == "pending"
    assert waiting.conditions[0]["reason"] == "NoFit"
    assert reserve(ask(2, excludeNodes=["node-a"])).reservation.status == "placed"
    charges = sorted(QuotaCharge.objects.filter(tenant=tenant).values_list("reservation_id", "amount"))
    services.release(globex.pk, now=NOW - timedelta(hours=1))
    for _ in range(3):
        assert services.retry_pending([waiting.pool_id], now=NOW) == 0
    waiting.refresh_from_db()
    assert waiting.status == "pending"
    assert waiting.conditions == [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "QuotaExceeded",
            "message": "quota exceeded for acme: gpu 2 used + 4 requested > limit 4",
        }
    ]
    assert (
        sorted(QuotaCharge.objects.filter(tenant=tenant).values_list("reservation_id", "amount")) == charges
    )
    assert held("gpu", at=NOW + timedelta(hours=1)) == 2


def test_scalar_room_is_the_most_claimed_at_any_instant_of_the_window(tenant, make_node):
    """
    node-a: 2 GPUs, 32 vcpu. 32 vcpu booked for next month leave today's room whole.
    """
    with_limits_label(make_node("node-a", gpus=2, vcpu=32))
    month = 30 * 24
    assert reserve(ask(1, start=month, hours=24, resources={"vcpu": 32})).reservation.status == "placed"
    today = reserve(ask(1, start=0, hours=24, resources={"vcpu": 32}))
    assert today.reservation.status == "placed"
    overlapping = reserve({**ask(start=month + 12, hours=24, resources={"vcpu": 1}), "devices": []})
    assert overlapping.reservation.status == "pending"
    assert overlapping.outcome.reason == "no node fits (1 node): 1 × fits: vcpu: 1 requested, 0 free"
    # Back to back with next month's claim: the whole room again.
    after = reserve({**ask(1, start=month + 24, hours=24, resources={"vcpu": 32})})
    assert after.reservation.status == "placed"
    assert claimed("vcpu", at=NOW + timedelta(hours=1)) == 32
    assert ScalarClaim.objects.count() == 3


def test_the_guarded_commit_refuses_a_claim_that_overlaps_one_made_since_the_plan(tenant, make_node):
    """A claim committed between plan and commit makes the commit come up short, not overcommit."""
    from capacity.conf import placer_config
    from capacity.placement import validate_request
    from capacity.placers.commit import LostRace, Owner, commit_member
    from capacity.placers.loader import load_pool
    from capacity.placers.reads import plan_request

    with_limits_label(make_node("node-a", gpus=2, vcpu=8))
    request = validate_request(
        {
            **ask(1, resources={"vcpu": 8}),
            "reservationId": "1",
            "nodeLabels": {"bc.dev/cap.devices.limits": "*"},
        }
    )
    pool = load_pool("lab-pool")
    plan, index = plan_request(request, pool, placer_config())
    # Meanwhile another placement claims 6 vcpu for part of the window.
    scalars_only = {**ask(start=6, hours=2, resources={"vcpu": 6}), "devices": []}
    assert reserve(scalars_only).reservation.status == "placed"
    from django.db import transaction

    with pytest.raises(LostRace) as lost, transaction.atomic():
        commit_member(request, plan.choice, pool, index, Owner(instance_id="vm-1"))
    assert lost.value.reason == "vcpu on node-a ran out"


def test_capacity_counts_what_is_booked_now_and_what_later_apart(tenant, make_node):
    """
    node-a, node-b: 8 GPUs each. 3 GPUs of node-a booked now, node-b's 8 next month; a booking that
    ended counts nothing.
    """
    make_node("node-a", gpus=8)
    make_node("node-b", gpus=8)
    running = ask(3, start=-1, hours=2, excludeNodes=["node-b"])
    reserve(running, now=booked_at(running))
    reserve(ask(8, start=30 * 24, hours=24, excludeNodes=["node-a"]))
    ended = ask(2, start=-48, hours=24)  # ended yesterday, never released by any process
    reserve(ended, now=booked_at(ended))
    now = capacity()
    assert (now["total"], now["allocated"], now["bookedLater"], now["free"]) == (16, 3, 8, 13)
    # One hour on, the 3 GPUs ended: nothing ran, and they count as free.
    then = capacity(at=NOW + timedelta(hours=1, minutes=1))
    assert (then["allocated"], then["bookedLater"], then["free"]) == (0, 8, 16)
    month = capacity(at=NOW + timedelta(days=30, hours=1))
    assert (month["allocated"], month["bookedLater"], month["free"]) == (8, 0, 8)


def test_booked_atoms_on_a_cordoned_node_are_not_subtracted_twice(tenant, make_node):
    from inventory import services as nodes

    make_node("node-a", gpus=8)
    make_node("node-b", gpus=8)
    running = ask(8, start=-1, hours=4, excludeNodes=["node-b"])
    reserve(running, now=booked_at(running))
    nodes.cordon("node-a")
    counts = capacity()
    assert (counts["allocated"], counts["cordoned"], counts["maintenance"], counts["free"]) == (8, 8, 0, 8)


def test_quota_report_shows_the_peak_against_each_limit_for_a_window(tenant, make_node):
    make_node("node-a", gpus=8)
    limit(tenant, "gpu", 8)
    reserve(ask(2, start=0, hours=10))
    reserve(ask(3, start=5, hours=10))
    reserve(ask(4, start=20, hours=10))
    window = Window(MS, MS + 12 * HOUR)
    uses = {u.resource: u for u in quota.report(tenant.pk, window, NOW + timedelta(hours=1))}
    assert (uses["gpu"].limit, uses["gpu"].peak, uses["gpu"].now, uses["gpu"].default) == (8, 5, 2, False)
    assert uses["*"].limit == 1_000_000
