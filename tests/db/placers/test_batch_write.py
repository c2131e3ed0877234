"""A batch round's one write statement guards each plan as the per-plan commit does.

Another connection changes a node while the batch plans (from a plugin filter, after the batch
read its ledger), so the round's statement meets a real concurrent change; the plan that lost is
planned again without the node and the round is sent again.
"""

from datetime import UTC, datetime

import pytest
from test_lost_races import racer

from capacity import services
from capacity.audit import audit
from capacity.models import Allocation, ScalarClaim
from capacity.placers.batch import place_batch
from inventory.models import Device, Node, NodeLabel
from maintenance.windows import schedule

from booking import HOUR, MS, NOW, ask, config, from_real_now, iso_at

pytestmark = pytest.mark.django_db(transaction=True)


def queue(data, **kw):
    return services.reserve(data, config=config(placer="pool-lease"), now=NOW, **kw).reservation


def claiming_node(make_node, name, vcpu):
    """A node whose vcpu requests may claim: it carries the device-limits capability label."""
    node = make_node(name, gpus=4, vcpu=vcpu)
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    return node


def lease(actions):
    return config(placer="pool-lease", plugins=(racer(actions),), top_n=1)


def node_of(reservation):
    return services.allocations_of(reservation)[0]["nodeId"]


def test_a_device_that_turned_unhealthy_is_replanned_and_the_other_plans_place(tenant, make_node):
    """
    node-a: [GPU0][GPU1]  ← both plans land here; GPU0 turns unhealthy once the batch planned
    node-b: [GPU0][GPU1]  ← the plan that held GPU0 moves here
    """
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    first, second = queue(ask(1)), queue(ask(1))

    def unhealthy():
        gpu = Device.objects.get(uuid="GPU-node-a-0")
        gpu.healthy = False
        gpu.save()  # the pool's rollups follow, as for any health report

    result = place_batch(first.pool_id, lease({"node-a": unhealthy}))
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["an atom on node-a turned unhealthy or unbookable"]
    assert sorted([node_of(first), node_of(second)]) == ["node-a", "node-b"]
    assert audit() == []


def test_a_label_that_went_away_loses_the_race_for_the_plans_that_asked_for_it(tenant, make_node):
    """
    node-a: [ ][ ] zone=a  ← the label is deleted once the batch planned
    node-b: [ ][ ] zone=a
    """
    for name in ("node-a", "node-b"):
        NodeLabel.objects.create(node=make_node(name, gpus=2), key="zone", value="a")
    labelled = queue(ask(2), node_labels={"zone": "a"})

    def unlabel():
        NodeLabel.objects.filter(node__name="node-a").delete()

    result = place_batch(labelled.pool_id, lease({"node-a": unlabel}))
    assert result.placed == [labelled.pk]
    assert result.lost == ["node-a is no longer schedulable"]
    assert node_of(labelled) == "node-b"


def test_a_scalar_claimed_meanwhile_stops_the_later_plan_on_the_node_and_keeps_the_earlier(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ] vcpu 64  ← both plans (32 vcpu each) land here; another transaction
                                    claims 32 vcpu once the batch planned: only the first fits
    node-b: [ ][ ][ ][ ] vcpu 64  ← the second moves here
    """
    claiming_node(make_node, "node-a", 64)
    claiming_node(make_node, "node-b", 64)
    first = queue(ask(1, resources={"vcpu": 32}))
    second = queue(ask(1, resources={"vcpu": 32}))

    def claim():
        node = Node.objects.get(name="node-a")
        lo = datetime.fromtimestamp(MS / 1000, UTC)
        hi = datetime.fromtimestamp((MS + 24 * HOUR) / 1000, UTC)
        held = Allocation.objects.create(
            instance_id="vm-9", node=node, starts_at=lo, ends_at=hi, resources={"vcpu": 32}
        )
        ScalarClaim.objects.create(allocation=held, node=node, resource="vcpu", amount=32, during=(lo, hi))

    result = place_batch(first.pool_id, lease({"node-a": claim}))
    assert result.placed == [first.pk, second.pk]
    assert result.lost == ["vcpu on node-a ran out"]
    assert (node_of(first), node_of(second)) == ("node-a", "node-b")
    assert ScalarClaim.objects.filter(node__name="node-a", resource="vcpu").count() == 2


def test_plans_of_one_round_on_one_node_fill_its_scalar_room_exactly(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ] vcpu 64  ← four plans of 16 vcpu: all fit, together exactly the room
    """
    claiming_node(make_node, "node-a", 64)
    queued = [queue(ask(1, resources={"vcpu": 16})) for _ in range(4)]
    result = place_batch(queued[0].pool_id, config(placer="pool-lease"))
    assert result.placed == [r.pk for r in queued]
    assert result.lost == []
    assert sum(ScalarClaim.objects.filter(node__name="node-a").values_list("amount", flat=True)) == 64
    assert audit() == []


def test_claims_that_never_overlap_count_at_their_peak_not_their_sum(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ] vcpu 64: 32 held for the first 12 h, 32 for the next 12 h (never both)
            ← a 24 h request of 32 vcpu fits beside them: at most 32 + 32 at any instant
    """
    node = claiming_node(make_node, "node-a", 64)
    for half in (0, 1):
        lo = datetime.fromtimestamp((MS + half * 12 * HOUR) / 1000, UTC)
        hi = datetime.fromtimestamp((MS + (half + 1) * 12 * HOUR) / 1000, UTC)
        held = Allocation.objects.create(
            instance_id=f"vm-{half}", node=node, starts_at=lo, ends_at=hi, resources={"vcpu": 32}
        )
        ScalarClaim.objects.create(allocation=held, node=node, resource="vcpu", amount=32, during=(lo, hi))
    reservation = queue(ask(1, resources={"vcpu": 32}))
    result = place_batch(reservation.pool_id, config(placer="pool-lease"))
    assert result.placed == [reservation.pk]
    assert result.lost == []
    assert node_of(reservation) == "node-a"


def test_a_later_plan_fits_beside_earlier_plans_of_its_round_that_never_overlap(tenant, make_node):
    """
    node-a: [ ][ ][ ][ ] vcpu 64: one round plans 32 vcpu for 0-12 h, 32 for 12-24 h, then 32 for
            0-24 h; their sum (96) passes the room, their peak (64) does not, so all three place
    """
    claiming_node(make_node, "node-a", 64)
    queued = [
        queue(ask(1, hours=12, resources={"vcpu": 32})),
        queue(ask(1, start=12, hours=12, resources={"vcpu": 32})),
        queue(ask(1, hours=24, resources={"vcpu": 32})),
    ]
    result = place_batch(queued[0].pool_id, config(placer="pool-lease"))
    assert result.placed == [r.pk for r in queued]
    assert result.lost == []
    assert {node_of(r) for r in queued} == {"node-a"}


def test_a_maintenance_window_scheduled_while_the_batch_planned_sends_its_plan_elsewhere(tenant, make_node):
    """
    node-a: [ ][ ]  ← a window over the request is scheduled once the batch planned
    node-b: [ ][ ]
    """

    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    s = from_real_now(10)
    queued = queue(ask(2, start=s + 1, hours=2))

    def window():
        schedule({"nodes": ["node-a"], "start": iso_at(s), "end": iso_at(s + 4)})

    result = place_batch(queued.pool_id, lease({"node-a": window}))
    assert result.placed == [queued.pk]
    assert result.lost == ["node-a is no longer schedulable"]
    assert node_of(queued) == "node-b"
