"""The pool-lease placer's batches: oldest first under one pool lock, lost races replanned."""

import random

import pytest
from test_lost_races import racer, steal

from capacity import services
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.placement import Window, validate_request
from capacity.placers.batch import place_batch, place_queued, plan_from_ledger
from capacity.placers.index import pool_index
from capacity.placers.ledger import Ledger
from capacity.placers.loader import load_pool
from capacity.placers.reads import plan_request
from inventory import services as nodes
from inventory.models import Pool

from booking import HOUR, MS, NOW, ask, config
from queueing import lease, queue, used

pytestmark = pytest.mark.django_db(transaction=True)


def test_reserve_answers_pending_with_a_queued_condition_and_charges_quota(tenant, make_node):
    make_node("node-a", gpus=2)
    reservation = queue(ask(2))
    assert reservation.status == "pending"
    assert reservation.conditions == [
        {"type": "Queued", "status": "True", "reason": "PoolLease", "message": "queued for the pool's placer"}
    ]
    stored = Reservation.objects.get(pk=reservation.pk)
    assert stored.conditions == reservation.conditions
    assert services.is_queued(stored)
    assert used() == 2  # charged at admission; the audit counts queued reservations as holding it
    assert Allocation.objects.count() == 0


def test_a_batch_places_oldest_first_and_each_plan_sees_the_ones_before_it(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ]  ← five requests of 1 GPU for the same day: the four oldest fit
    """
    make_node("node-a", gpus=4)
    queued = [queue(ask(1)) for _ in range(5)]
    result = place_batch(Pool.objects.get(slug="lab-pool").pk, lease())
    assert result.placed == [r.pk for r in queued[:4]]
    assert result.pending == [queued[4].pk]
    assert DeviceBooking.objects.values("device_id").distinct().count() == 4
    last = Reservation.objects.get(pk=queued[4].pk)
    assert last.status == "pending"
    assert last.conditions == [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "NoFit",
            "message": "no node fits (1 node): 1 × fits: 0 of 1 gpu free",
        }
    ]
    assert not services.is_queued(last)
    assert used() == 4  # the pending one's quota went back
    for r in queued[:4]:
        placed = Reservation.objects.get(pk=r.pk)
        assert placed.status == "placed" and placed.conditions == []


def test_batches_hold_at_most_max_batch_and_place_queued_runs_until_the_queue_is_empty(tenant, make_node):
    make_node("node-a", gpus=8)
    queued = [queue(ask(1)) for _ in range(5)]
    first = place_batch(Pool.objects.get(slug="lab-pool").pk, lease(max_batch=2))
    assert first.placed == [queued[0].pk, queued[1].pk]
    rest = place_queued(lease(max_batch=2))
    assert rest.placed == [r.pk for r in queued[2:]]
    assert not Reservation.objects.filter(status="pending").exists()


def test_a_lost_race_in_a_batch_is_replanned_without_the_node(tenant, other_tenant, make_node):
    """
    node-a: [ ][ ]  ← globex books both GPUs (inline) while the batch plans
    node-b: [ ][ ]
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    reservation = queue(ask(2))
    cfg = lease(plugins=(racer({"node-a": steal("node-a", ["node-b"])}),), top_n=1)
    result = place_batch(reservation.pool_id, cfg)
    assert result.placed == [reservation.pk]
    assert result.lost == ["an atom on node-a was booked concurrently"]
    assert services.allocations_of(reservation)[0]["nodeId"] == "node-b"


def test_a_lost_race_rolls_back_the_later_plans_and_sends_them_again(tenant, other_tenant, make_node):
    """
    node-a: [ ][ ]  ← the oldest plan lands here, then globex takes both GPUs
    node-b: [ ][ ]  ← the second plan's node; the first moves to node-c
    node-c: [ ][ ]
    """
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    first, second = queue(ask(2)), queue(ask(2))
    cfg = lease(plugins=(racer({"node-a": steal("node-a", ["node-b", "node-c"])}),), top_n=1)
    result = place_batch(first.pool_id, cfg)
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["an atom on node-a was booked concurrently"]
    nodes = {services.allocations_of(r)[0]["nodeId"] for r in (first, second)}
    assert nodes == {"node-b", "node-c"}
    assert Allocation.objects.filter(reservation__in=[first.pk, second.pk]).count() == 2


def test_a_node_cordoned_after_the_batch_planned_is_replanned_and_the_plans_before_it_still_place(
    tenant, make_node
):
    """
    node-a: [ ][ ]  ← the first plan lands here and stays
    node-b: [ ][ ]  ← the second plan's node, cordoned once the batch planned; it moves to node-c
    node-c: [ ][ ]
    """
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    first, second = queue(ask(2)), queue(ask(2))
    cfg = lease(plugins=(racer({"node-b": lambda: nodes.cordon("node-b")}),), top_n=1)
    result = place_batch(first.pool_id, cfg)
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["node-b is no longer schedulable"]
    assert services.allocations_of(first)[0]["nodeId"] == "node-a"
    assert services.allocations_of(second)[0]["nodeId"] == "node-c"
    assert Allocation.objects.count() == 2
    assert DeviceBooking.objects.count() == 4


def test_a_batch_commits_on_a_node_dedicated_to_its_tenant_and_not_on_one_dedicated_to_another(
    tenant, other_tenant, make_node
):
    """
    node-a: [ ][ ]  dedicated to acme: acme's request lands here
    node-b: [ ][ ]  dedicated to globex, after globex's request was planned on it
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    nodes.dedicate("node-a", "acme")
    ours, theirs = queue(ask(2)), queue(ask(2, tenant="globex", excludeNodes=["node-a"]))
    cfg = lease(plugins=(racer({"node-b": lambda: nodes.dedicate("node-b", "acme")}),), top_n=1)
    result = place_batch(ours.pool_id, cfg)
    assert result.placed == [ours.pk]
    assert result.pending == [theirs.pk]
    assert services.allocations_of(ours)[0]["nodeId"] == "node-a"
    assert result.lost == ["node-b is no longer schedulable"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_batch_plans_from_its_ledger_like_planning_the_whole_pool(tenant, make_node, seed):
    """
    40 nodes of 8 GPUs and 64 vcpu: NV boards, PIX/SYS boxes and boards with unknown links, some
    cordoned, random bookings with vcpu claims; the batch plans 10 nodes first, widening as needed.
    """
    rng = random.Random(seed)
    for i in range(40):
        make_node(f"n{i:02d}", gpus=8, vcpu=64, links=rng.choice(["NV", "NV", "PIX", "SYS", None]))
        if rng.random() < 0.1:
            nodes.cordon(f"n{i:02d}")
    for _ in range(40):
        services.reserve(
            ask(rng.choice([1, 2, 4]), start=rng.choice([0, 0, 30]), resources={"vcpu": rng.choice([8, 24])}),
            config=config(),
            now=NOW,
        )
    pool = load_pool("lab-pool")
    static = pool_index(pool)
    asks = [
        (gpus, top_n, vcpu, start)
        for gpus, top_n in ((1, 5), (2, 5), (3, 5), (4, 5), (8, 5), (1, 6), (2, 1))
        for vcpu, start in ((0, 0), (40, 0), (16, 30))
    ]
    ledger = Ledger.load(pool, static, [Window(MS, MS + 60 * HOUR)])
    for gpus, top_n, vcpu, start in asks:
        cfg = config(top_n=top_n)
        request = validate_request({**ask(gpus, start=start, resources={"vcpu": vcpu}), "reservationId": "r"})
        batched, _index = plan_from_ledger(request, pool, cfg, static, ledger)
        full, _ = plan_request(request, pool, cfg, shortlist=False)
        assert batched.ranked[:top_n] == full.ranked[:top_n], (gpus, top_n, vcpu, start)
        assert batched.choice == full.choice
        assert batched.pending_reason() == full.pending_reason()


def test_three_lost_races_in_a_batch_leave_it_pending_with_every_reason_and_refunded(
    tenant, other_tenant, make_node
):
    from inventory.models import Device

    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)

    def break_a_gpu():
        gpu = Device.objects.get(uuid="GPU-node-c-1")
        gpu.healthy = False
        gpu.save()  # through the model, so the rollup follows

    actions = {
        "node-a": steal("node-a", ["node-b", "node-c"]),
        "node-b": lambda: nodes.cordon("node-b"),
        "node-c": break_a_gpu,
    }
    reservation = queue(ask(2))
    result = place_batch(reservation.pool_id, lease(plugins=(racer(actions),), top_n=1))
    assert result.pending == [reservation.pk]
    message = (
        "Unschedulable after 3 conflicting attempts: an atom on node-a was booked concurrently; "
        "node-b is no longer schedulable; an atom on node-c turned unhealthy or unbookable"
    )
    assert Reservation.objects.get(pk=reservation.pk).condition("Unschedulable")["message"] == message
    assert used() == 0
