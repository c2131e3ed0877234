"""The pure earliest-start search and the never-fits checks, on hand-built nodes (no database)."""

from __future__ import annotations

from capacity.placement import Expression, plan_placement
from capacity.placement.earliest import Counts, NodeTime, Shape, earliest_start
from capacity.placement.satisfiable import kinds, pool_facts, unsatisfiable

from .builders import POOL, dgx_h100, gpus, pcie_box, request

H = 3_600_000


def node(busy: dict[int, list[tuple[int, int]]], atoms: int = 4) -> NodeTime:
    """A node of `atoms` GPUs (keys 0..atoms-1) with these bookings per GPU."""
    return NodeTime(atoms={"gpu": list(range(atoms))}, busy=busy, capacity={}, held={})


def test_counts_say_which_atoms_are_free_for_a_window_at_any_start() -> None:
    """
    GPU0 booked 2h-5h, GPU1 booked 0h-1h and 3h-4h; windows 1h long.
    At 0h: GPU0 free, GPU1 busy. At 1h: both free ([1h, 2h) touches GPU0's 2h). At 2.5h: GPU0 busy,
    GPU1 busy ([2.5h, 3.5h) overlaps 3h-4h). At 5h: both free.
    """
    counts = Counts(node({0: [(2 * H, 5 * H)], 1: [(0, H), (3 * H, 4 * H)]}, atoms=2), H)
    assert [counts.free("gpu", t) for t in (0, H, 5 * H // 2, 5 * H)] == [1, 2, 0, 2]
    assert counts.free("tpu", 0) == 0


def test_the_earliest_start_is_the_first_booking_end_the_planner_accepts() -> None:
    """
    a: 4 GPUs, two booked until 6h      b: 4 GPUs, all booked until 3h, GPU3 again 4h-9h
    Three GPUs for 2h: a has only 2 free until 6h; b has none until 3h, then 3 (GPU3's second
    booking overlaps [3h, 5h)). The planner is asked once, at 3h on b, and accepts.
    """
    nodes = {
        "a": node({0: [(0, 6 * H)], 1: [(0, 6 * H)]}),
        "b": node({i: [(0, 3 * H)] for i in range(4)} | {3: [(0, 3 * H), (4 * H, 9 * H)]}),
    }
    asked: list[tuple[int, tuple[str, ...]]] = []

    def fits(at: int, names) -> object | None:
        asked.append((at, tuple(names)))
        return object() if at >= 3 * H else None

    found = earliest_start(Shape({"gpu": 3}, {}, 2 * H), nodes, 0, 48 * H, fits)
    assert found == (3 * H, ["b"])
    assert asked == [(3 * H, ("b",))]  # a never passed its count before 3h, b at 0h neither


def test_a_gang_needs_enough_nodes_free_together() -> None:
    nodes = {n: node({0: [(0, h * H)]}, atoms=1) for n, h in (("a", 1), ("b", 3), ("c", 5))}
    found = earliest_start(
        Shape({"gpu": 1}, {}, H, gang_size=3), nodes, 0, 48 * H, lambda at, names: object()
    )
    assert found == (5 * H, ["a", "b", "c"])


def test_nothing_within_the_horizon_is_none() -> None:
    nodes = {"a": node({0: [(0, 10 * H)]}, atoms=1)}
    assert earliest_start(Shape({"gpu": 1}, {}, H), nodes, 0, 5 * H, lambda at, names: object()) is None


def test_never_fits_names_the_class_the_key_and_the_largest_node() -> None:
    views = [dgx_h100("d1"), pcie_box("p1")]
    facts = pool_facts(views)
    tpu = unsatisfiable(request(("tpu", 1)), facts, "lab")
    assert (tpu.field, tpu.message) == ("class", "no node in lab has class tpu: classes are gpu")
    nine = unsatisfiable(request(gpus(9)), facts, "lab")
    assert (nine.field, nine.message) == ("count", "the largest node in lab has 8 gpu")
    typo = unsatisfiable(
        request(gpus(1, selector=(Expression("gpuproduct", "In", ("H100",)),))), facts, "lab"
    )
    assert typo.field == "selector" and typo.message.endswith("; did you mean gpuProduct?")
    assert unsatisfiable(request(gpus(8)), facts, "lab") is None


def test_never_fits_plans_one_node_of_each_kind_emptied() -> None:
    """Every GPU of d1 booked and p1 cordoned: 8 NVLinked GPUs fit d1 once emptied; on PCIe never."""
    views = [dgx_h100("d1", booked=range(8)), pcie_box("p1", cordoned=True)]
    facts, grouped = pool_facts(views), kinds(views)

    def plan_empty(nodes):
        return plan_placement(request(gpus(8, topology="nvlink-all")), nodes, POOL)

    assert unsatisfiable(request(gpus(8, topology="nvlink-all")), facts, "lab", plan_empty, grouped) is None
    only_pcie = [pcie_box("p1")]

    def plan_pcie(nodes):
        return plan_placement(request(gpus(4, topology="nvlink-all")), nodes, POOL)

    never = unsatisfiable(
        request(gpus(4, topology="nvlink-all")), pool_facts(only_pcie), "lab", plan_pcie, kinds(only_pcie)
    )
    assert never is not None and never.field == "request"
    assert never.message.startswith(
        "no node in lab could take it even with nothing booked: no node fits (1 node)"
    )
