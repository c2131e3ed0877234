"""Gangs: the best k nodes, optionally sharing a label value."""

from __future__ import annotations

from capacity.placement import Gang, plan_placement

from .builders import POOL, dgx_h100, gpus, pcie_box, request

TIMES = "\u00d7"


def test_a_gang_takes_the_best_k_nodes() -> None:
    views = [dgx_h100("a"), dgx_h100("b", booked=[0, 1, 2, 3]), dgx_h100("c", booked=[0, 1])]
    plan = plan_placement(request(gpus(4), gang=Gang(2)), views, POOL)
    assert plan.fits
    assert [m.node_id for m in plan.gang] == ["b", "c"]
    assert plan.choice == plan.gang[0]


def test_a_gang_that_does_not_fit_says_how_many_nodes_do() -> None:
    views = [dgx_h100("a"), dgx_h100("b", cordoned=True), dgx_h100("c")]
    plan = plan_placement(request(gpus(1), gang=Gang(3)), views, POOL)
    assert not plan.fits and plan.gang == () and plan.choice is None
    assert plan.pending_reason() == f"no gang of 3 nodes fits: only 2 nodes fit; 1 {TIMES} cordoned"
    one = plan_placement(request(gpus(1), gang=Gang(2)), views[:2], POOL)
    assert one.pending_reason() == f"no gang of 2 nodes fits: only 1 node fits; 1 {TIMES} cordoned"


def test_a_gang_with_no_fitting_node_reads_like_any_other_request() -> None:
    plan = plan_placement(request(gpus(1), gang=Gang(2)), [dgx_h100("a", cordoned=True)], POOL)
    assert plan.pending_reason() == f"no node fits (1 node): 1 {TIMES} cordoned"


def test_a_topology_key_keeps_the_gang_within_one_label_value() -> None:
    views = [
        dgx_h100("a1", labels={"rack": "a"}, booked=[0, 1, 2, 3]),
        dgx_h100("b1", labels={"rack": "b"}, booked=[0, 1]),
        dgx_h100("b2", labels={"rack": "b"}, booked=[0, 1]),
        pcie_box("a2", labels={"rack": "a"}),
        dgx_h100("x"),
    ]
    plan = plan_placement(request(gpus(4), gang=Gang(2, "rack")), views, POOL)
    # a1 ranks first (2.25), but rack b's pair (1.875 + 1.875) beats a1 + the PCIe a2 (2.25 + 1.225).
    assert plan.ranked[0].node_id == "a1"
    assert [m.node_id for m in plan.gang] == ["b1", "b2"]


def test_a_topology_key_that_no_group_satisfies() -> None:
    views = [dgx_h100("a1", labels={"rack": "a"}), dgx_h100("b1", labels={"rack": "b"}), dgx_h100("x")]
    plan = plan_placement(request(gpus(1), gang=Gang(2, "rack")), views, POOL)
    assert not plan.fits
    assert plan.pending_reason() == "no gang of 2 nodes fits: only 1 node fits with the same rack"


def test_an_archived_pool_answers_for_gangs_too() -> None:
    from capacity.placement import Pool

    plan = plan_placement(request(gpus(1), gang=Gang(2)), [dgx_h100("a")], Pool("pool-1", archived=True))
    assert plan.pending_reason() == "the pool is archived"
