"""Links and the default atom pick on DGX, PCIe and MIG boards."""

from __future__ import annotations

import dataclasses
from random import Random

from hypothesis import given
from hypothesis import strategies as st

from capacity.placement import (
    LINK_RANKS,
    UNKNOWN_RANK,
    Atom,
    NodeView,
    default_pick,
    link_between,
    link_rank,
    plan_placement,
    rank_matrix,
    worst_rank,
)

from .builders import POOL, a100_mig, dgx_h100, gpu, gpus, ids, node, pcie_box, request, symmetric


def pick(view: NodeView, count: int, cls: str = "gpu") -> tuple[tuple[str, ...], int]:
    candidates = [a for a in view.free if a.device_class == cls]
    atoms, worst = default_pick(candidates, count, view)
    return tuple(a.id for a in atoms), worst


def test_link_ranks_run_from_nv_to_sys() -> None:
    assert LINK_RANKS == ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")
    assert [link_rank(name) for name in LINK_RANKS] == [0, 1, 2, 3, 4, 5]
    assert link_rank(None) == UNKNOWN_RANK == 6


def test_nvidia_smi_spellings_of_links_are_understood() -> None:
    assert link_rank("NV18") == 0
    assert link_rank("SOC") == 5
    assert link_rank("bogus") == UNKNOWN_RANK


class TestDgx:
    def test_an_idle_board_gives_four_gpus_of_one_numa_node(self) -> None:
        view = dgx_h100()
        assert pick(view, 4) == (ids(view, 0, 1, 2, 3), 0)

    def test_with_two_gpus_of_numa_0_booked_four_come_from_numa_1(self) -> None:
        view = dgx_h100(booked=[0, 1])
        assert pick(view, 4) == (ids(view, 4, 5, 6, 7), 0)

    def test_a_pair_stays_on_one_numa_node_even_when_another_pair_has_lower_indexes(self) -> None:
        view = dgx_h100(booked=[0, 1, 2, 4, 5])
        assert pick(view, 2) == (ids(view, 6, 7), 0)

    def test_one_gpu_is_the_first_in_numa_index_order(self) -> None:
        view = dgx_h100(booked=[0])
        assert pick(view, 1) == (ids(view, 1), 0)

    def test_all_free_atoms_are_taken_when_the_count_matches(self) -> None:
        view = dgx_h100(booked=[3])
        assert pick(view, 7) == (ids(view, 0, 1, 2, 4, 5, 6, 7), 0)


class TestPcie:
    def test_a_pair_shares_a_pcie_switch(self) -> None:
        view = pcie_box()
        assert pick(view, 2) == (ids(view, 0, 1), 1)

    def test_a_pair_moves_to_a_free_switch_rather_than_crossing_the_bridge(self) -> None:
        view = pcie_box(booked=[1])
        assert pick(view, 2) == (ids(view, 2, 3), 1)

    def test_four_gpus_fill_one_socket(self) -> None:
        view = pcie_box()
        assert pick(view, 4) == (ids(view, 0, 1, 2, 3), 2)

    def test_four_gpus_avoid_crossing_sockets(self) -> None:
        view = pcie_box(booked=[0])
        assert pick(view, 4) == (ids(view, 4, 5, 6, 7), 2)

    def test_equal_sets_go_to_the_earliest_seed(self) -> None:
        view = pcie_box(booked=[1, 3, 5, 7])
        assert pick(view, 2) == (ids(view, 0, 2), 2)

    def test_eight_gpus_span_both_sockets(self) -> None:
        view = pcie_box()
        assert pick(view, 8) == (ids(view, *range(8)), 5)


class TestMig:
    def test_slices_of_one_gpu_link_as_nv(self) -> None:
        view = a100_mig()
        slices = [a for a in view.free if a.device_class == "mig-1g.10gb"]
        parent = view.devices[0]
        assert link_between(view, slices[0], slices[1]) == "NV"
        assert link_between(view, parent, slices[3]) == "NV"
        assert link_between(view, slices[3], parent) == "NV"

    def test_a_slice_uses_its_parents_link_to_another_gpu(self) -> None:
        view = a100_mig()
        whole = next(a for a in view.free if a.device_class == "gpu")
        assert link_between(view, view.free[1], whole) == "SYS"

    def test_slices_are_picked_in_index_order(self) -> None:
        view = a100_mig(booked_slices=[0])
        assert pick(view, 3, "mig-1g.10gb") == (("mig-MIG-0-1", "mig-MIG-0-2", "mig-MIG-0-3"), 0)

    def test_nvlink_all_holds_for_slices_of_one_gpu(self) -> None:
        view = a100_mig()
        plan = plan_placement(request(("mig-1g.10gb", 3), topology="nvlink-all"), [view], POOL)
        assert plan.ranked[0].atoms == (("mig-MIG-0-0", "mig-MIG-0-1", "mig-MIG-0-2"),)

    def test_a_partitioned_parent_is_not_a_free_gpu(self) -> None:
        plan = plan_placement(request(("gpu", 2)), [a100_mig()], POOL)
        assert [(r.filter, r.reason) for r in plan.rejected] == [("fits", "1 of 2 gpu free")]


def mixed_board() -> NodeView:
    """Return four GPUs where NVLink crosses NUMA nodes.

    NUMA 0: GPU0 --PIX-- GPU1        NUMA 1: GPU2 --PIX-- GPU3
    GPU0 ==NV== GPU2, GPU1 ==NV== GPU3; every other pair SYS.
    """
    g = [gpu("mx", i, numa=i // 2) for i in range(4)]
    links = {
        (g[0].id, g[1].id): "PIX",
        (g[2].id, g[3].id): "PIX",
        (g[0].id, g[2].id): "NV",
        (g[1].id, g[3].id): "NV",
        (g[0].id, g[3].id): "SYS",
        (g[1].id, g[2].id): "SYS",
    }
    return node("mx", g, links=symmetric(links))


def test_nvlink_beats_fewer_numa_nodes() -> None:
    view = mixed_board()
    assert pick(view, 2) == (ids(view, 0, 2), 0)


def test_the_seeds_numa_node_breaks_ties_before_the_index() -> None:
    """GPU0, GPU2 on NUMA 0 and GPU1, GPU3 on NUMA 1, all NV: a pair seeded at GPU0 takes GPU2."""
    g = [gpu("tie", i, numa=i % 2) for i in range(4)]
    view = node("tie", g, links=symmetric({(a.id, b.id): "NV" for a in g for b in g if a.index < b.index}))
    assert pick(view, 2) == (ids(view, 0, 2), 0)


def test_links_may_be_reported_in_one_direction_only() -> None:
    g = [gpu("one", i, numa=0) for i in range(2)]
    view = node("one", g, links={g[1].id: {g[0].id: "PIX"}})
    assert link_between(view, g[0], g[1]) == "PIX"
    assert worst_rank(view, g) == 1


def test_unknown_links_are_worse_than_sys_when_growing() -> None:
    """GPU0 ? GPU1 (unknown), GPU0 --SYS-- GPU2, GPU1 ? GPU2: the known SYS pair wins."""
    g = [gpu("unk", i, numa=0) for i in range(3)]
    view = node("unk", g, links=symmetric({(g[0].id, g[2].id): "SYS"}))
    assert link_between(view, g[0], g[1]) is None
    assert pick(view, 2) == (ids(view, 0, 2), 5)
    assert worst_rank(view, g) == UNKNOWN_RANK


class TestNvlinkAll:
    def test_a_fully_nv_board_passes(self) -> None:
        plan = plan_placement(request(gpus(8, topology="nvlink-all")), [dgx_h100()], POOL)
        assert plan.fits and plan.ranked[0].scores["topology"] == 1.0

    def test_a_partial_nvlink_board_passes_for_a_linked_pair_only(self) -> None:
        view = mixed_board()
        pair = plan_placement(request(gpus(2), topology="nvlink-all"), [view], POOL)
        assert pair.ranked[0].atoms == (ids(view, 0, 2),)
        four = plan_placement(request(gpus(4), topology="nvlink-all"), [view], POOL)
        assert [(r.filter, r.reason) for r in four.rejected] == [
            ("topology", "no 4 gpu fully connected by NVLink")
        ]

    def test_unknown_links_never_satisfy_it(self) -> None:
        view = dataclasses.replace(dgx_h100(), links={})
        plan = plan_placement(request(gpus(2, topology="nvlink-all")), [view], POOL)
        assert [(r.filter, r.reason) for r in plan.rejected] == [
            ("topology", "no 2 gpu fully connected by NVLink")
        ]

    def test_one_gpu_needs_no_links(self) -> None:
        view = dataclasses.replace(dgx_h100(), links={})
        assert plan_placement(request(gpus(1), topology="nvlink-all"), [view], POOL).fits

    def test_a_device_request_can_ask_for_it_alone(self) -> None:
        plan = plan_placement(request(gpus(4, topology="nvlink-all"), topology="any"), [pcie_box()], POOL)
        assert [(r.filter, r.reason) for r in plan.rejected] == [
            ("topology", "no 4 gpu fully connected by NVLink")
        ]
        relaxed = plan_placement(request(gpus(4, topology="any"), topology="nvlink-all"), [pcie_box()], POOL)
        assert relaxed.fits


def test_the_pick_is_deterministic_whatever_the_free_order() -> None:
    view = pcie_box(booked=[0])
    shuffled = dataclasses.replace(view, free=tuple(reversed(view.free)))
    assert pick(shuffled, 4) == pick(view, 4)
    assert pick(shuffled, 3) == pick(view, 3)


def test_an_atom_with_no_numa_node_sorts_last() -> None:
    atoms = [Atom("b", "gpu", index=0), Atom("a", "gpu", numa_node=1, index=5)]
    chosen, _ = default_pick(atoms, 1, node("x"))
    assert [a.id for a in chosen] == ["a"]


LINKS = st.sampled_from([*LINK_RANKS, None])


@st.composite
def boards(draw: st.DrawFn) -> tuple[NodeView, int]:
    size = draw(st.integers(2, 9))
    g = [gpu("p", i, numa=draw(st.sampled_from([0, 1, None]))) for i in range(size)]
    pairs = {}
    for a in g:
        for b in g:
            if a.index < b.index:
                link = draw(LINKS)
                if link is not None:
                    pairs[a.id, b.id] = link
    one_way = draw(st.booleans())
    links = (
        {a: {b: v for (x, b), v in pairs.items() if x == a} for a, _ in pairs}
        if one_way
        else symmetric(pairs)
    )
    return node("p", g, links=links), draw(st.integers(1, size))


@given(boards(), st.randoms())
def test_a_default_pick_is_count_distinct_candidates_whatever_their_order(
    board: tuple[NodeView, int], rnd: Random
) -> None:
    view, count = board
    atoms, worst = default_pick(view.free, count, view)
    assert len({a.id for a in atoms}) == count and set(atoms) <= set(view.free)
    assert worst == worst_rank(view, atoms)
    shuffled = list(view.free)
    rnd.shuffle(shuffled)
    assert default_pick(shuffled, count, view) == (atoms, worst)


def test_the_rank_matrix_reads_links_in_either_direction() -> None:
    g = [gpu("m", i, numa=0) for i in range(3)]
    view = node("m", g, links={g[1].id: {g[0].id: "PIX"}, g[2].id: {g[0].id: "NV", g[1].id: "SYS"}})
    assert rank_matrix(view, g) == [[0, 1, 0], [1, 0, 5], [0, 5, 0]]
    assert pick(view, 2) == (ids(view, 0, 2), 0)
