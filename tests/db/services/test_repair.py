"""BookingRepair: a booking on an atom that became unusable moves, keeps its id, and says so."""

from datetime import timedelta

from capacity import services
from capacity.audit import audit
from capacity.models import DeviceBooking
from capacity.services.repair import repair_pools
from inventory import services as nodes
from inventory.models import Device, NodeLabel

from booking import NOW, ask, atoms_of, config, from_real_now, held, reserve

LATER = NOW + timedelta(hours=6)


def break_gpus(**where):
    """Mark devices unhealthy as a report would: saved one by one, so inventory's signals follow."""
    for device in Device.objects.filter(**where):
        device.healthy = False
        device.save(update_fields=["healthy"])


def test_a_future_booking_on_a_gpu_reported_unhealthy_moves_to_healthy_gpus_on_the_same_node(
    tenant, make_node, django_capture_on_commit_callbacks
):
    """node-a: 4 GPUs; 2 booked for tomorrow. GPU 1 turns unhealthy: the booking takes GPUs 0 and 2."""
    from django.utils import timezone

    make_node("node-a", gpus=4)
    # Tomorrow by the real clock: the repair after the commit reads it.
    tomorrow = from_real_now(24)
    reservation = reserve(ask(2, start=tomorrow), now=timezone.now()).reservation
    assert atoms_of(reservation) == [("node-a", ["GPU-node-a-0", "GPU-node-a-1"])]
    with django_capture_on_commit_callbacks(execute=True):
        break_gpus(uuid="GPU-node-a-1")  # the repair runs once this commits
    reservation.refresh_from_db()
    assert reservation.status == "placed"
    [gpu_ids] = [atoms for _, atoms in atoms_of(reservation)]
    assert "GPU-node-a-1" not in gpu_ids and len(gpu_ids) == 2
    [condition] = reservation.conditions
    assert (condition["type"], condition["reason"]) == ("Repaired", "AtomsUnusable")
    assert "moved from node-a (GPU 0, 1) to node-a (GPU " in condition["message"]
    assert condition["message"].endswith("GPU-node-a-1 unhealthy")
    assert held("gpu", at=NOW + timedelta(hours=tomorrow + 6)) == 2
    assert audit() == []


def test_a_running_booking_on_a_node_in_maintenance_ends_there_now_and_goes_on_elsewhere(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    reservation = reserve(ask(2)).reservation
    [(first, _)] = atoms_of(reservation)
    nodes.set_maintenance(first, True)
    result = repair_pools([reservation.pool_id], now=LATER, config=config())
    assert result.repaired == [reservation.pk]
    reservation.refresh_from_db()
    [(second, atoms)] = atoms_of(reservation)
    assert second != first and len(atoms) == 2
    old = DeviceBooking.objects.filter(allocation__reservation=reservation, device__node__name=first)
    assert [b.during.upper for b in old] == [LATER, LATER]  # what ran on it stays on the books
    assert reservation.conditions[0]["message"].endswith(f"{first} is in maintenance")
    assert audit() == []


def test_when_nothing_fits_the_booking_stays_says_why_and_is_repaired_once_room_frees(tenant, make_node):
    """node-a, node-b: 2 GPUs each, both booked; a GPU of node-a fails, then node-b's booking ends."""
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    first = reserve(ask(2)).reservation
    second = reserve(ask(2)).reservation
    [(node, atoms)] = atoms_of(first)
    break_gpus(uuid=atoms[0])
    assert repair_pools([first.pool_id], now=NOW, config=config()).waiting == [first.pk]
    first.refresh_from_db()
    [condition] = first.conditions
    assert (condition["type"], condition["reason"]) == ("RepairPending", "NoFit")
    assert condition["message"].startswith(f"{atoms[0]} unhealthy: kept on {node} ")
    assert atoms_of(first) == [(node, atoms)]
    services.release(second.pk, now=NOW)
    assert repair_pools([first.pool_id], now=NOW, config=config()).repaired == [first.pk]
    first.refresh_from_db()
    assert [c["type"] for c in first.conditions] == ["Repaired"]
    assert audit() == []


def test_a_gang_member_is_repaired_onto_a_node_sharing_the_topology_key(tenant, make_node):
    """rack r1: node-a, node-b, node-c; rack r2: node-d. The gang of 2 by rack loses node-a."""
    for name, rack in (("node-a", "r1"), ("node-b", "r1"), ("node-c", "r1"), ("node-d", "r2")):
        NodeLabel.objects.create(node=make_node(name, gpus=2), key="rack", value=rack)
    reservation = reserve(ask(2, gang={"size": 2, "topologyKey": "rack"})).reservation
    members = sorted(n for n, _ in atoms_of(reservation))
    nodes.set_maintenance(members[0], True)
    repair_pools([reservation.pool_id], now=NOW, config=config())
    after = sorted(n for n, _ in atoms_of(reservation))
    assert members[0] not in after and members[1] in after
    assert all(NodeLabel.objects.get(node__name=n, key="rack").value == "r1" for n in after)
    assert audit() == []


def test_a_lease_is_moved_only_when_its_node_fails_not_for_one_gpu(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=4)
    lease = {**ask(1, binding="node")}
    del lease["devices"]
    reservation = reserve(lease).reservation
    [(first, _)] = atoms_of(reservation)
    break_gpus(node__name=first)
    assert repair_pools([reservation.pool_id], now=NOW, config=config()).repaired == []
    nodes.set_maintenance(first, True)
    assert repair_pools([reservation.pool_id], now=NOW, config=config()).repaired == [reservation.pk]
    [(second, _)] = atoms_of(reservation)
    assert second != first
    assert audit() == []


def test_moved_atoms_read_as_gpu_indexes_and_ranges_not_uuids(tenant, make_node):
    """node-a: 8 GPUs, GPU0 split into two MIG slices."""
    from capacity.services.repair import atoms_text
    from inventory.models import Device

    node = make_node("node-a", gpus=8)
    gpu0 = Device.objects.get(node=node, index=0)
    for i in range(2):
        Device.objects.create(node=node, uuid=f"MIG-{i}", device_class="mig-3g.40gb", parent=gpu0, index=i)
    assert atoms_text("node-a", [f"GPU-node-a-{i}" for i in (4, 1, 2, 3, 6)]) == "GPU 1–4, 6"
    assert atoms_text("node-a", ["GPU-node-a-7", "MIG-1", "MIG-0"]) == "GPU 7; MIG 0/0, 0/1"
    assert atoms_text("node-b", ["GPU-node-a-7"]) == "nothing"
