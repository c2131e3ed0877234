"""The books against what a node says: unverified hardware counts nowhere, an operator's reshape of a
booked GPU moves its booking, and check_capacity sees atoms that no longer match their devices."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from capacity.audit import audit
from capacity.placers.index import pool_index
from capacity.placers.loader import load_pool
from capacity.services import EVERYONE
from capacity.services.pool_availability import pool_availability
from inventory.ingest import Reporter, apply_node_report
from inventory.models import Device, Node
from inventory.trust import accept_devices

from booking import ask, atoms_of, capacity, from_real_now, reserve

NODE = Reporter.node_credential("node.node-a")
OPERATOR = Reporter.operator("ops")


def gpus(node="node-a", count=4, **changed):
    """Return a report's devices: `count` healthy GPUs, with `changed` fields for some indexes."""
    devices = [
        {"uuid": f"GPU-{node}-{i}", "class": "gpu", "index": i, "parent": None, "healthy": True}
        for i in range(count)
    ]
    for i, fields in changed.items():
        devices[int(i.removeprefix("gpu"))].update(fields)
    return devices


def tomorrow(gpus_wanted=2):
    """Reserve GPUs from tomorrow by the real clock (what runs after a commit reads that clock)."""
    return reserve(ask(gpus_wanted, start=from_real_now(24)), now=timezone.now()).reservation


def sql(statement, *params):
    with connection.cursor() as cur:
        cur.execute(statement, params)


def test_unverified_devices_count_in_no_rollup_index_or_availability_until_accepted(tenant, make_node):
    make_node("node-a", gpus=4)
    apply_node_report(Node.objects.get(name="node-a"), {"devices": gpus(count=6)}, by=NODE)
    assert capacity(at=timezone.now())["total"] == 4
    index = pool_index(load_pool("lab-pool"))
    assert index.totals["node-a"] == {"gpu": 4}
    assert len(index.node_devices["node-a"]) == 4
    assert pool_availability("lab-pool", scope=EVERYONE, hours=2).totals == {"gpu": 4}
    assert accept_devices("node-a") == ["GPU-node-a-4", "GPU-node-a-5"]
    assert capacity(at=timezone.now())["total"] == 6
    assert pool_index(load_pool("lab-pool")).totals["node-a"] == {"gpu": 6}
    assert pool_availability("lab-pool", scope=EVERYONE, hours=2).totals == {"gpu": 6}


def test_an_operators_report_that_reshapes_a_booked_gpu_moves_its_booking(
    tenant, make_node, django_capture_on_commit_callbacks
):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    [(_, atoms)] = atoms_of(reservation)
    assert atoms == ["GPU-node-a-0", "GPU-node-a-1"]
    with django_capture_on_commit_callbacks(execute=True):
        apply_node_report(
            Node.objects.get(name="node-a"), {"devices": gpus(gpu1={"class": "cpu"})}, by=OPERATOR
        )
    reservation.refresh_from_db()
    [(_, atoms)] = atoms_of(reservation)
    assert "GPU-node-a-1" not in atoms and len(atoms) == 2
    [condition] = reservation.conditions
    assert condition["type"] == "Repaired"
    assert condition["message"].endswith("GPU-node-a-1 changed shape (an operator's report)")
    assert audit() == []


def test_a_node_reshaping_a_booked_gpu_writes_nothing(tenant, make_node):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    from inventory.errors import IngestError

    with pytest.raises(IngestError) as refused:
        apply_node_report(
            Node.objects.get(name="node-a"), {"devices": gpus(gpu0={"parent": "GPU-node-a-1"})}, by=NODE
        )
    assert refused.value.code == "CONFLICT"
    assert f"GPU-node-a-0 (MIG parent none → GPU-node-a-1) is booked by reservation {reservation.pk}" in str(
        refused.value
    )
    assert Device.objects.get(uuid="GPU-node-a-0").parent_id is None


@pytest.mark.allow_drift
def test_check_capacity_sees_a_booked_gpu_whose_class_changed_by_hand(tenant, make_node):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    allocation = reservation.allocations.get().pk
    sql("UPDATE inventory_device SET device_class = 'cpu' WHERE uuid = 'GPU-node-a-1'")
    assert (
        f"allocation {allocation} of reservation {reservation.pk}: holds atoms 1 cpu, 1 gpu, "
        "its request asks 2 gpu" in audit()
    )
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_capacity", stdout=out)
    assert "holds atoms 1 cpu, 1 gpu" in out.getvalue()


@pytest.mark.allow_drift
def test_check_capacity_sees_a_booked_gpu_made_a_slice_of_another_by_hand(tenant, make_node):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    allocation = reservation.allocations.get().pk
    sql(
        "UPDATE inventory_device SET parent_id = (SELECT id FROM inventory_device WHERE uuid = 'GPU-node-a-0') "
        "WHERE uuid = 'GPU-node-a-1'"
    )
    # The reservation now lists one atom: GPU 1 reads as a slice of GPU 0, which it books.
    assert (
        f"allocation {allocation} of reservation {reservation.pk}: holds atoms 1 gpu, its request asks 2 gpu"
        in (audit())
    )


@pytest.mark.allow_drift
def test_check_capacity_sees_a_slice_added_under_a_booked_gpu_by_hand(tenant, make_node):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    allocation = reservation.allocations.get().pk
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    sql(
        "INSERT INTO inventory_device (node_id, uuid, device_class, parent_id, index, attributes, healthy, "
        "bookable, verified) VALUES (%s, 'MIG-x', 'mig-1g.10gb', %s, 0, '{}', true, true, true)",
        gpu.node_id,
        gpu.pk,
    )
    assert (
        f"allocation {allocation}: device GPU-node-a-0 is booked whole but its slice MIG-x is not" in audit()
    )


@pytest.mark.allow_drift
def test_check_capacity_sees_a_booked_gpu_moved_to_another_node_by_hand(tenant, make_node):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    reservation = tomorrow(2)
    [(node, [first, _])] = atoms_of(reservation)
    other = "node-b" if node == "node-a" else "node-a"
    allocation = reservation.allocations.get().pk
    sql(
        "UPDATE inventory_device SET node_id = (SELECT id FROM inventory_node WHERE name = %s) WHERE uuid = %s",
        other,
        first,
    )
    assert (
        f"allocation {allocation}: device {first} is on node {other}, not the allocation's {node}" in audit()
    )


@pytest.mark.allow_drift
def test_check_capacity_sees_a_device_booked_while_unverified(tenant, make_node):
    make_node("node-a", gpus=4)
    reservation = tomorrow(2)
    allocation = reservation.allocations.get().pk
    sql("UPDATE inventory_device SET verified = false, bookable = false WHERE uuid = 'GPU-node-a-0'")
    assert f"allocation {allocation}: device GPU-node-a-0 is booked while unverified" in audit()


def test_the_database_refuses_an_unverified_bookable_device(tenant, make_node):
    from django.db import IntegrityError, transaction

    make_node("node-a", gpus=1)
    with pytest.raises(IntegrityError, match="device_unverified_not_bookable"), transaction.atomic():
        sql("UPDATE inventory_device SET verified = false WHERE uuid = 'GPU-node-a-0'")


def test_a_reshaped_booking_that_found_no_room_is_moved_by_the_next_worker_round(
    tenant, make_node, django_capture_on_commit_callbacks
):
    """node-a, node-b: 2 GPUs each, both booked tomorrow; an operator's report makes a booked GPU
    a cpu. No room: RepairPending and drift. node-b's booking is released: one round moves it."""
    from capacity import services
    from capacity.conf import placer_config
    from capacity.worker import run_round

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    first, second = tomorrow(2), tomorrow(2)
    [(node, atoms)] = atoms_of(first)
    with django_capture_on_commit_callbacks(execute=True):
        apply_node_report(
            Node.objects.get(name=node), {"devices": gpus(node, count=2, gpu1={"class": "cpu"})}, by=OPERATOR
        )
    first.refresh_from_db()
    [condition] = first.conditions
    assert (condition["type"], condition["reason"]) == ("RepairPending", "NoFit")
    assert atoms_of(first) == [(node, atoms)]
    assert any(line.startswith(f"allocation {first.allocations.get().pk} of reservation") for line in audit())
    services.release(second.pk)
    assert run_round(placer_config()).repaired == 1
    first.refresh_from_db()
    [(moved_to, moved)] = atoms_of(first)
    assert moved_to != node and len(moved) == 2
    assert [c["type"] for c in first.conditions] == ["Repaired"]
    assert audit() == []
