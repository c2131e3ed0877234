"""Nodes built alike share one atom pick: the memo never changes a plan."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from capacity.placement import LINK_RANKS, NodeView, PickMemo, node_shape, plan_placement

from .builders import POOL, a100_mig, dgx_h100, gpu, gpus, node, pcie_box, request, symmetric

LINKS = st.sampled_from([*LINK_RANKS, None])


@st.composite
def fleets(draw: st.DrawFn) -> list[NodeView]:
    """Up to three board designs, each copied onto several nodes with their own booked GPUs."""
    designs = []
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 8))
        numa = [draw(st.sampled_from([0, 1, None])) for _ in range(size)]
        pairs = {(i, j): draw(LINKS) for i in range(size) for j in range(i + 1, size)}
        designs.append((size, numa, pairs))
    views = []
    for n in range(draw(st.integers(1, 12))):
        size, numa, pairs = designs[draw(st.integers(0, len(designs) - 1))]
        name = f"n{n:02d}"
        atoms = [gpu(name, i, numa=numa[i]) for i in range(size)]
        links = symmetric({(atoms[i].id, atoms[j].id): v for (i, j), v in pairs.items() if v is not None})
        booked = [a.id for a in atoms if draw(st.booleans())]
        view = node(name, atoms, booked=booked, links=links)
        views.append(dataclasses.replace(view, shape=node_shape(view)))
    return views


@settings(max_examples=150, deadline=None)
@given(fleets(), st.integers(1, 8))
def test_a_memo_shared_across_plans_gives_the_plans_planning_alone_gives(views, count) -> None:
    memo: PickMemo = {}
    ask = request(gpus(count))
    alone = plan_placement(ask, [dataclasses.replace(v, shape=None) for v in views], POOL)
    first = plan_placement(ask, views, POOL, memo=memo)
    again = plan_placement(ask, views, POOL, memo=memo)
    assert first == alone and again == alone


def test_nodes_built_alike_share_a_shape_and_different_boards_do_not() -> None:
    assert node_shape(dgx_h100("a")) == node_shape(dgx_h100("b", booked=[1, 2]))
    assert node_shape(dgx_h100("a")) != node_shape(pcie_box("a"))
    assert node_shape(a100_mig("a")) == node_shape(a100_mig("b"))
    assert node_shape(a100_mig("a")) != node_shape(dgx_h100("a"))


def test_a_memo_is_used_only_for_views_that_carry_a_shape() -> None:
    memo: PickMemo = {}
    plan_placement(request(gpus(2)), [dgx_h100("a")], POOL, memo=memo)
    assert memo == {}
    view = dgx_h100("a")
    plan_placement(request(gpus(2)), [dataclasses.replace(view, shape=node_shape(view))], POOL, memo=memo)
    assert len(memo) == 1
