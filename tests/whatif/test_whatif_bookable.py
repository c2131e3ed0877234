"""What if counts bookable capacity: the nodes and devices no one may book now are neither free nor idle."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from capacity.placement import CapacityError
from capacity.rollups import BUCKETS, capacity_by_pool, refresh_rollups
from devtools.demo import build_demo
from inventory.models import Device, Node, NodeCondition, Pool
from inventory.states import AGENT_STALE
from whatif.changes import Changes
from whatif.demand import Synthetic
from whatif.simulation import Inputs, simulate

pytestmark = pytest.mark.django_db

FEW = Synthetic(count=40, seed=3, per_hour=10, mean_hours=4)
SAME = ("requests", "placed", "placedAtOnce", "neverPlaced", "waitP95Minutes", "gpuHoursBooked",
        "gpuHoursIdle", "preemptions", "nodes", "gpus", "largestFreeBlock")  # fmt: skip


@pytest.fixture
def demo():
    """The demo (`seed_demo`): in h100-prod ams1-dgx-03 and -04 cordoned, -07 in maintenance, -12
    dedicated to acme; in pcie-batch one node cordoned, one provisioning, one disconnected and one
    unhealthy GPU; in a100-mig a NotReady node and a node owned by globex. Here also ams1-dgx-05's
    agent is stale and one GPU of ams1-dgx-06 is not bookable."""
    build_demo()
    stale = Node.objects.get(name="ams1-dgx-05")
    NodeCondition.objects.create(
        node=stale, type=AGENT_STALE, status=NodeCondition.Status.TRUE, reason="NoReport"
    )
    device = Device.objects.get(node__name="ams1-dgx-06", index=2, parent__isnull=True)
    device.bookable = False
    device.save()
    refresh_rollups(list(Pool.objects.values_list("pk", flat=True)))


def bookable_on_the_pool_page(slug: str) -> int:
    """Return the pool page's GPUs no bucket holds (booked now or free): what someone may book."""
    pool = Pool.objects.get(slug=slug)
    gpu = next(c for c in capacity_by_pool([pool.pk], timezone.now())[pool.pk] if c["class"] == "gpu")
    return gpu["total"] - sum(gpu[b] for b in BUCKETS)


@pytest.mark.parametrize("slug", ["h100-prod", "pcie-batch"])
def test_the_baseline_counts_the_gpus_the_pool_page_counts_as_bookable(demo, slug):
    baseline = simulate(Inputs(slug, synthetic=FEW))["baseline"]
    assert baseline["gpus"] == bookable_on_the_pool_page(slug)
    assert baseline["largestFreeBlock"][0]["freeGpus"] == baseline["gpus"]  # all free at the start


def test_nodes_no_one_may_book_are_named_and_left_out_of_both_sides(demo):
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=Changes(weights={"binpack": 2.0})))
    assert result["leftOut"] == [
        {"node": "ams1-dgx-03", "why": "cordoned"},
        {"node": "ams1-dgx-04", "why": "cordoned"},
        {"node": "ams1-dgx-05", "why": "NoSchedule: AgentStale"},
        {"node": "ams1-dgx-07", "why": "in maintenance"},
    ]
    assert result["restored"] == []
    for side in (result["baseline"], result["changed"]):
        # 24 nodes of 8, less 4 left out and the unbookable GPU; the dedicated node counts.
        assert (side["nodes"], side["gpus"]) == (20, 159)


def test_taking_out_a_node_no_one_may_book_changes_nothing(demo):
    gone = Changes(remove=("ams1-dgx-03", "ams1-dgx-04", "ams1-dgx-07"))
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=gone))
    assert {k: result["changed"][k] for k in SAME} == {k: result["baseline"][k] for k in SAME}


def test_restored_nodes_come_back_on_the_changed_side_only(demo):
    plain = simulate(Inputs("h100-prod", synthetic=FEW))
    result = simulate(
        Inputs("h100-prod", synthetic=FEW, changes=Changes(restore=("ams1-dgx-03", "ams1-dgx-07")))
    )
    assert result["baseline"] == plain["baseline"]
    assert result["changed"]["gpus"] == result["baseline"]["gpus"] + 16
    assert result["changed"]["nodes"] == result["baseline"]["nodes"] + 2
    assert result["restored"] == [
        {"node": "ams1-dgx-03", "why": "cordoned"},
        {"node": "ams1-dgx-07", "why": "in maintenance"},
    ]
    assert [n["node"] for n in result["leftOut"]] == ["ams1-dgx-04", "ams1-dgx-05"]


def test_a_restored_node_keeps_its_unhealthy_devices_out(demo):
    device = Device.objects.get(node__name="ams1-dgx-03", index=1, parent__isnull=True)
    device.healthy = False
    device.save()
    refresh_rollups([device.node.pool_id])
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=Changes(restore=("ams1-dgx-03",))))
    assert result["changed"]["gpus"] == result["baseline"]["gpus"] + 7


def test_a_copy_of_a_node_no_one_may_book_is_bookable_as_new(demo):
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=Changes(add=(("ams1-dgx-07", 2),))))
    assert result["changed"]["gpus"] == result["baseline"]["gpus"] + 16
    # A copy of the node with an unbookable GPU has all eight.
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=Changes(add=(("ams1-dgx-06", 1),))))
    assert result["changed"]["gpus"] == result["baseline"]["gpus"] + 8


@pytest.mark.parametrize(
    ("pool", "restore", "message"),
    [
        ("h100-prod", "ams1-dgx-01", "--restore-nodes: 'ams1-dgx-01' may be booked already"),
        ("h100-prod", "ams1-dgx-99", "--restore-nodes: no node of the pool is 'ams1-dgx-99'"),
        ("h100-prod", "rack=a03", "--restore-nodes: 'rack=a03' may be booked already"),
        ("a100-mig", "sfo2-a100-02", "--restore-nodes: sfo2-a100-02 never adds capacity to this pool"),
    ],
)
def test_restoring_what_is_not_out_or_never_counts_is_refused(demo, pool, restore, message):
    with pytest.raises(CapacityError) as refused:
        simulate(Inputs(pool, synthetic=FEW, changes=Changes(restore=(restore,))), progress=pytest.fail)
    assert refused.value.code == "INVALID_INPUT" and message in refused.value.message


def test_a_label_restores_the_nodes_it_names_that_are_out(demo):
    # Every node of the pool has the label: only the four that are out come back.
    result = simulate(Inputs("h100-prod", synthetic=FEW, changes=Changes(restore=("gpu.model=H100",))))
    assert [n["node"] for n in result["restored"]] == [
        "ams1-dgx-03",
        "ams1-dgx-04",
        "ams1-dgx-05",
        "ams1-dgx-07",
    ]
    assert result["leftOut"] == []
    assert result["changed"]["gpus"] == 191  # all 24 nodes; the unbookable GPU stays out


def test_the_command_restores_a_comma_separated_list_and_says_what_it_left_out(demo):
    out = StringIO()
    call_command(
        "simulate", "--pool", "h100-prod", "--synthetic", "20", "--restore-nodes", "ams1-dgx-03,ams1-dgx-04",
        stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "counted on neither side (no one may book them now): ams1-dgx-05 (NoSchedule: AgentStale), " \
        "ams1-dgx-07 (in maintenance)" in text  # fmt: skip
    assert "brought back on the changed side: ams1-dgx-03 (was cordoned), ams1-dgx-04 (was cordoned)" in text
    out = StringIO()
    call_command("simulate", "--pool", "h100-prod", "--synthetic", "20", "--json", stdout=out)
    assert json.loads(out.getvalue())["baseline"]["gpus"] == bookable_on_the_pool_page("h100-prod")
