"""BookingRepair and drain under concurrency and faults: nothing double-booked, nothing lost."""

import dataclasses

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import Reservation
from capacity.placers.batch import place_queued
from capacity.services import repair
from capacity.services.repair import repair_pools
from inventory import services as nodes
from inventory.models import Device
from maintenance.drain import drain

from booking import NOW, ask, atoms_of, config, from_real_now, reserve
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def assert_nothing_lost(count):
    """Every reservation is placed, pending or released, and a placed one holds live atoms."""
    rows = list(Reservation.objects.all())
    assert len(rows) == count
    for r in rows:
        assert r.status in ("placed", "pending", "released"), r.status
        if r.status == "placed":
            assert atoms_of(r), f"reservation {r.pk} is placed with nothing"


def test_a_repair_racing_new_placements_for_the_same_atoms_never_double_books(tenant, make_node):
    """
    node-a, node-b: 4 GPUs each. 2 GPUs are booked on node-a; node-a goes into maintenance while
    four connections each ask for 1 GPU on the only room left, node-b, and one repairs. Ten rounds.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    total = 0
    for round_ in range(10):
        window = {"start": round_ * 48, "hours": 24}
        victim = reserve(ask(2, excludeNodes=["node-b"], **window)).reservation
        victim.request["placement"].pop("excludeNodes")  # the repair may take it anywhere
        Reservation.objects.filter(pk=victim.pk).update(request=victim.request)
        total += 1
        nodes.set_maintenance("node-a", True)

        def client(i, window=window, victim=victim):
            if i == 0:
                repair_pools([victim.pool_id], now=NOW, config=config())
            else:
                reserve(ask(1, **window))

        assert run_threads(5, client) == []
        total += 4
        nodes.set_maintenance("node-a", False)
    assert_nothing_lost(total)
    assert audit() == []


def test_a_gpu_flapping_unhealthy_and_healthy_while_bookings_land_never_double_books(tenant, make_node):
    """node-a, node-b: 4 GPUs each. One thread flips GPU-node-a-0 twenty times; four book 1 GPU each, five times."""
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)

    def client(i):
        if i == 0:
            for n in range(20):
                device = Device.objects.get(uuid="GPU-node-a-0")
                device.healthy = n % 2 == 1
                device.save(update_fields=["healthy"])
                repair_pools([device.node.pool_id], now=NOW, config=config())
        else:
            for k in range(5):
                reserve(ask(1, start=k * 48, hours=6))

    assert run_threads(5, client) == []
    assert_nothing_lost(20)
    assert audit() == []


def test_a_drain_during_a_pool_lease_batch_never_double_books(tenant, make_node):
    """Forty 1-GPU requests queued for tomorrow; node-a is drained while the batch places them."""
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=8)
    cfg = dataclasses.replace(config(), placer="pool-lease")
    for _ in range(40):
        services.reserve(ask(1, start=24), config=cfg, now=NOW)

    def client(i):
        if i == 0:
            place_queued(cfg)
        else:
            drain("node-a", now=NOW)

    assert run_threads(2, client) == []
    place_queued(cfg)
    drain("node-a", now=NOW)  # what the batch placed after the drain's look moves now
    assert_nothing_lost(40)
    assert not any(n == "node-a" for r in Reservation.objects.filter(status="placed") for n, _ in atoms_of(r))
    assert audit() == []


def test_a_repair_that_dies_half_way_leaves_the_booking_as_it_was(tenant, make_node, monkeypatch):
    """A worker killed after ending the old allocation and before placing the new one: nothing changes."""
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    from django.utils import timezone

    reservation = reserve(ask(2, start=from_real_now(1)), now=timezone.now()).reservation
    before = atoms_of(reservation)

    def killed(*args, **kwargs):
        raise SystemExit("killed")

    monkeypatch.setattr(repair, "place", killed)
    with pytest.raises(SystemExit):
        # The repair runs once maintenance commits, and dies inside its transaction.
        nodes.set_maintenance(before[0][0], True)
    assert atoms_of(reservation) == before
    reservation.refresh_from_db()
    assert (reservation.status, reservation.conditions) == ("placed", [])
    monkeypatch.undo()
    assert repair_pools([reservation.pool_id], config=config()).repaired == [reservation.pk]
    assert audit() == []
