"""Whole-node leases (`binding: 'node'`): a lease takes every device and all scalar room of a node, or waits."""

import dataclasses

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking, QuotaCharge, Reservation, ScalarClaim
from capacity.placement import CapacityError
from inventory.models import Device, NodeLabel

from booking import NOW, ask, capacity, claimed, config, held, reserve


def lease(tenant="acme", pool="lab-pool", start=0, hours=24, **extra):
    data = ask(1, tenant=tenant, pool=pool, start=start, hours=hours, binding="node", **extra)
    del data["devices"]
    return data


def test_a_lease_books_every_device_and_the_whole_scalar_room_of_one_node(tenant, make_node):
    """
    node-a: 4 GPUs, GPU 3 split into two slices, 64 vcpu; node-b: 2 GPUs. The lease takes node-a
    (healthier first, then by name: both are whole): all 4 GPUs, both slices and 64 vcpu.
    """
    node = make_node("node-a", gpus=4, vcpu=64)
    make_node("node-b", gpus=2)
    parent = node.devices.get(index=3)
    for i in range(2):
        Device.objects.create(
            node=node, uuid=f"MIG-a-{i}", device_class="mig-3g.40gb", parent=parent, index=i
        )
    result = reserve(lease())
    reservation = result.reservation
    assert (reservation.status, reservation.binding) == ("placed", "node")
    [allocation] = services.allocations_of(reservation)
    assert allocation["nodeId"] == "node-a"
    assert allocation["atoms"] == [f"GPU-node-a-{i}" for i in range(4)]
    assert DeviceBooking.objects.filter(allocation_id=allocation["id"]).count() == 6
    assert claimed("vcpu", node="node-a") == 64
    # Quota: the atoms the node offers (3 whole GPUs and 2 slices) and its vcpu.
    assert (held("gpu"), held("mig-3g.40gb"), held("vcpu")) == (3, 2, 64)
    assert audit() == []


def test_a_node_with_any_booking_in_the_window_is_not_leasable_and_says_until_when(tenant, make_node):
    """node-a: 2 GPUs, one booked for 30 h from now; a lease over the next day takes node-b."""
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    reserve(ask(1, hours=30))
    preview = services.preview(lease(), now=NOW, explain=True)
    assert [c["nodeId"] for c in preview.candidates] == ["node-b"]
    [rejection] = preview.plan.rejected
    assert (rejection.node_id, rejection.filter) == ("node-a", "fits")
    assert rejection.reason == "booked until 2026-12-03T18:00Z: 1 of 2 gpu"
    assert reserve(lease()).reservation.status == "placed"
    # Now nothing is leasable: the reservation waits with the reason per node.
    pending = reserve(lease()).reservation
    assert pending.status == "pending"
    assert pending.condition("Unschedulable")["message"] == (
        "no node fits (2 nodes): 1 × fits: booked until 2026-12-03T18:00Z: 1 of 2 gpu; "
        "1 × fits: booked until 2026-12-03T12:00Z: 2 of 2 gpu"
    )
    assert audit() == []


def test_a_leased_node_takes_no_device_request_and_a_later_window_is_free(tenant, make_node):
    make_node("node-a", gpus=2)
    reserve(lease())
    assert reserve(ask(1)).reservation.status == "pending"
    assert reserve(ask(2, start=24)).reservation.status == "placed"
    assert capacity()["allocated"] == 2


def test_a_lease_honours_dedications_and_skips_cordoned_nodes(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2, cordoned=True)
    make_node("node-b", gpus=2, no_schedule_reasons=["dedicated=globex"])
    make_node("node-c", gpus=2, no_schedule_reasons=["dedicated=acme"])
    preview = services.preview(lease(), now=NOW, explain=True)
    assert [c["nodeId"] for c in preview.candidates] == ["node-c"]
    assert {(r.node_id, r.reason) for r in preview.plan.rejected} == {
        ("node-a", "cordoned"),
        ("node-b", "NoSchedule: dedicated=globex"),
    }


def test_a_gang_lease_takes_size_nodes_sharing_the_topology_key_or_nothing(tenant, make_node):
    """rack r1: node-a, node-b; rack r2: node-c. A gang of 2 by rack takes r1; a second one waits."""
    for name, rack in (("node-a", "r1"), ("node-b", "r1"), ("node-c", "r2")):
        NodeLabel.objects.create(node=make_node(name, gpus=2), key="rack", value=rack)
    gang = lease(gang={"size": 2, "topologyKey": "rack"})
    placed = reserve(gang).reservation
    assert sorted(a["nodeId"] for a in services.allocations_of(placed)) == ["node-a", "node-b"]
    second = reserve(gang).reservation
    assert second.status == "pending"
    assert DeviceBooking.objects.filter(allocation__reservation=second).count() == 0
    assert QuotaCharge.objects.filter(reservation=second).count() == 0
    assert audit() == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"devices": [{"class": "gpu", "count": 1}]}, "devices: a whole-node lease takes every device"),
        ({"resources": {"vcpu": 4}}, "resources: a whole-node lease takes every device"),
        ({"gang": {"size": 4}}, "gang.size: a gang lease of 4 nodes is larger than pool lab-pool (2 nodes)"),
        ({"binding": "nodes"}, "binding must be one of none, node, kubernetes"),
        ({"priority": "urgent"}, 'priority must be "regular" or "spot"'),
    ],
)
def test_bad_lease_input_is_invalid_input_and_stores_nothing(tenant, make_node, extra, message):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    with pytest.raises(CapacityError) as err:
        reserve({**lease(), **extra})
    assert err.value.code == "INVALID_INPUT"
    assert err.value.message.startswith(message)
    assert Reservation.objects.count() == 0


def test_a_lease_beyond_quota_is_refused_and_stores_nothing(tenant, make_node):
    from capacity.models import Quota

    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    with pytest.raises(CapacityError) as err:
        reserve(lease())
    assert err.value.code == "QUOTA_EXCEEDED"
    assert (Reservation.objects.count(), DeviceBooking.objects.count(), ScalarClaim.objects.count()) == (
        0,
        0,
        0,
    )


def test_with_the_pool_lease_placer_a_lease_still_places_at_once(tenant, make_node):
    make_node("node-a", gpus=2)
    cfg = dataclasses.replace(config(), placer="pool-lease")
    assert services.reserve(lease(), config=cfg, now=NOW).reservation.status == "placed"


def test_releasing_a_lease_frees_the_node_and_a_pending_lease_then_places(tenant, make_node):
    make_node("node-a", gpus=2)
    first = reserve(lease()).reservation
    second = reserve(lease()).reservation
    assert second.status == "pending"
    services.release(first.pk, now=NOW)
    services.retry_pending([first.pool_id], config=config(), now=NOW)
    second.refresh_from_db()
    assert second.status == "placed"
    assert audit() == []


def test_a_regular_lease_takes_back_the_node_with_the_least_spot_work(tenant, other_tenant, make_node):
    """
    node-a: 2 GPUs, globex's spot work on both for 48 h; node-b: spot on one GPU for 24 h;
    node-c: one regular GPU. A regular lease takes node-b, preempting only its spot work.
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    make_node("node-c", gpus=2)
    dear = reserve(ask(2, tenant="globex", priority="spot", hours=48)).reservation
    cheap = reserve(ask(1, tenant="globex", priority="spot", excludeNodes=["node-c"])).reservation
    reserve(ask(1, tenant="globex", excludeNodes=["node-a", "node-b"]))
    assert [a["nodeId"] for r in (dear, cheap) for a in services.allocations_of(r)] == ["node-a", "node-b"]
    preview = services.preview(lease(), now=NOW)
    assert (preview.fits, preview.preemptible) == (
        False,
        {"reservations": [cheap.pk], "others": 0, "nodes": ["node-b"], "startsAt": NOW},
    )
    result = reserve(lease())
    assert result.outcome.preempted == (cheap.pk,)
    assert [a["nodeId"] for a in services.allocations_of(result.reservation)] == ["node-b"]
    cheap.refresh_from_db()
    dear.refresh_from_db()
    assert (cheap.status, dear.status) == ("preempted", "placed")
    assert audit() == []


def test_a_spot_lease_is_taken_back_by_a_regular_device_request(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2, vcpu=16)
    spot_lease = reserve(lease(tenant="globex", priority="spot")).reservation
    result = reserve(ask(1))
    assert result.outcome.preempted == (spot_lease.pk,)
    assert claimed("vcpu", node="node-a") == 0
    assert audit() == []
