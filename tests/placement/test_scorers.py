"""Scorer formulas, weights and their precedence, ties and the top-N choice."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.placement import (
    DEFAULT_WEIGHTS,
    Atom,
    NodeView,
    Plan,
    Resource,
    SchedulerPlugin,
    count_scores,
    define_scheduler_plugin,
    max_link_dependent_score,
    plan_placement,
)
from capacity.placement.scorers import binpack_score, clamp_score, fragmentation_score, topology_score

from .builders import POOL, dgx_h100, gpus, node, pcie_box, request


def only(plan: Plan) -> dict[str, float]:
    assert len(plan.ranked) == 1, plan.rejected
    return dict(plan.ranked[0].scores)


def test_default_weights_match_the_spec() -> None:
    assert DEFAULT_WEIGHTS == {
        "binpack": 1,
        "topology": 1,
        "fragmentation": 0.25,
        "spread": 0,
        "image-cached": 0.5,
    }


def test_a_full_nvlink_board_scores_2_25_as_in_the_preview_example() -> None:
    plan = plan_placement(request(gpus(8, topology="nvlink-all")), [dgx_h100()], POOL)
    assert only(plan) == {"binpack": 1.0, "topology": 1.0, "fragmentation": 1.0, "spread": 0.0}
    assert plan.ranked[0].score == 2.25


def test_scores_on_a_dgx_with_two_gpus_booked() -> None:
    # 8 devices, 6 free, 4 picked: freeAfter 2 -> binpack 1 - 2/8, fragmentation 0.5 (power of two).
    plan = plan_placement(request(gpus(4)), [dgx_h100(booked=[0, 1])], POOL)
    assert only(plan) == {"binpack": 0.75, "topology": 1.0, "fragmentation": 0.5, "spread": 0.25}
    assert plan.ranked[0].score == 0.75 + 1.0 + 0.25 * 0.5


def test_scores_on_a_pcie_box() -> None:
    # Worst link PXB (rank 2): topology 1 - 2/5; freeAfter 4 -> binpack 0.5, fragmentation 0.5.
    plan = plan_placement(request(gpus(4)), [pcie_box()], POOL)
    assert only(plan) == pytest.approx({"binpack": 0.5, "topology": 0.6, "fragmentation": 0.5, "spread": 0.5})
    assert plan.ranked[0].score == round(0.5 + 0.6 + 0.125, 12)


def test_fragmentation_is_zero_when_what_is_left_is_not_a_power_of_two() -> None:
    assert only(plan_placement(request(gpus(5)), [dgx_h100()], POOL))["fragmentation"] == 0.0
    assert [fragmentation_score(n) for n in range(9)] == [1, 0.5, 0.5, 0, 0.5, 0, 0, 0, 0.5]


def test_topology_is_neutral_for_unknown_links_and_full_for_one_gpu() -> None:
    unlinked = dataclasses.replace(dgx_h100(), links={})
    assert only(plan_placement(request(gpus(2)), [unlinked], POOL))["topology"] == 0.5
    assert only(plan_placement(request(gpus(1)), [unlinked], POOL))["topology"] == 1.0
    assert topology_score(2, 5) == 0.0
    assert topology_score(2, 0) == 1.0


def test_topology_covers_atoms_of_every_device_request() -> None:
    # Two one-GPU requests on a PCIe box: the picks are GPU0 and GPU1, linked PIX.
    plan = plan_placement(request(gpus(1), gpus(1)), [pcie_box()], POOL)
    assert plan.ranked[0].atoms == (("pcie-GPU-0",), ("pcie-GPU-1",))
    assert only(plan)["topology"] == pytest.approx(0.8)


def test_binpack_counts_only_healthy_bookable_devices_of_the_requested_classes() -> None:
    board = dgx_h100()
    sick = dataclasses.replace(board.devices[7], healthy=False)
    extra = Atom("dgx-NIC-0", "nic")
    devices = (*board.devices[:7], sick, extra)
    view = dataclasses.replace(board, devices=devices, free=devices)
    # total 7 healthy gpus, 7 free healthy, 2 picked: freeAfter 5.
    assert only(plan_placement(request(gpus(2)), [view], POOL))["binpack"] == pytest.approx(1 - 5 / 7)


def test_binpack_is_zero_on_a_node_without_the_classes() -> None:
    assert binpack_score(0, 0) == 0.0
    assert binpack_score(-1, 4) == 1.0


def test_image_cached_is_scored_only_for_requests_with_an_image() -> None:
    views = [dgx_h100("a"), dgx_h100("b")]
    plain = plan_placement(request(gpus(1)), views, POOL, image_cached={"b"})
    assert "image-cached" not in plain.ranked[0].scores
    with_image = plan_placement(request(gpus(1), image_id="img"), views, POOL, image_cached={"b"})
    assert [(r.node_id, r.scores["image-cached"]) for r in with_image.ranked] == [("b", 1.0), ("a", 0.0)]
    assert with_image.ranked[0].score - with_image.ranked[1].score == pytest.approx(0.5)


def test_settings_weights_can_turn_packing_into_spreading() -> None:
    fuller, emptier = dgx_h100("a", booked=[0, 1, 2, 3]), dgx_h100("b")
    packed = plan_placement(request(gpus(1)), [emptier, fuller], POOL)
    assert packed.ranked[0].node_id == "a"
    spread = plan_placement(request(gpus(1)), [emptier, fuller], POOL, weights={"spread": 1, "binpack": 0})
    assert spread.ranked[0].node_id == "b"
    assert spread.ranked[0].scores["binpack"] > 0


def test_zero_weight_scorers_still_appear_in_scores() -> None:
    scores = only(plan_placement(request(gpus(1)), [dgx_h100()], POOL))
    assert "spread" in scores


def scorer_plugin(scorer_id: str, value: float, weight: float | None = None) -> SchedulerPlugin:
    scorer: dict[str, object] = {"id": scorer_id, "score": lambda request, node: value}
    if weight is not None:
        scorer["weight"] = weight
    return define_scheduler_plugin(f"p-{scorer_id}", scorers=[scorer])


def total_with(plugin: SchedulerPlugin, **weights: float) -> float:
    base = plan_placement(request(gpus(8)), [dgx_h100()], POOL).ranked[0].score
    plan = plan_placement(request(gpus(8)), [dgx_h100()], POOL, plugins=[plugin], weights=weights or None)
    return plan.ranked[0].score - base


def test_a_plugin_scorer_weight_is_settings_then_its_own_then_1() -> None:
    assert total_with(scorer_plugin("x", 1.0)) == pytest.approx(1.0)
    assert total_with(scorer_plugin("x", 1.0, weight=0.5)) == pytest.approx(0.5)
    assert total_with(scorer_plugin("x", 1.0, weight=0.5), x=0.75) == pytest.approx(0.75)


def test_a_plugin_scorer_named_like_a_built_in_replaces_its_score_and_weight() -> None:
    # fragmentation scores 1 (weight 0.25) on a full board; the plugin's 0.4 at weight 1 replaces it.
    plan = plan_placement(request(gpus(8)), [dgx_h100()], POOL, plugins=[scorer_plugin("fragmentation", 0.4)])
    assert plan.ranked[0].scores["fragmentation"] == 0.4
    assert plan.ranked[0].score == pytest.approx(1 + 1 + 0.4)
    assert list(plan.ranked[0].scores) == ["binpack", "topology", "fragmentation", "spread"]
    own = plan_placement(
        request(gpus(8)), [dgx_h100()], POOL, plugins=[scorer_plugin("binpack", 0.5, weight=0.3)]
    )
    assert own.ranked[0].score == pytest.approx(0.15 + 1 + 0.25)
    settings = plan_placement(
        request(gpus(8)),
        [dgx_h100()],
        POOL,
        plugins=[scorer_plugin("binpack", 0.5, weight=0.3)],
        weights={"binpack": 2},
    )
    assert settings.ranked[0].score == pytest.approx(1.0 + 1 + 0.25)


@pytest.mark.parametrize(
    ("value", "clamped"),
    [
        (0.25, 0.25),
        (3, 1.0),
        (-2, 0.0),
        (math.nan, 0.0),
        (math.inf, 0.0),
        (-math.inf, 0.0),
        ("high", 0.0),
        (None, 0.0),
    ],
)
def test_plugin_scores_are_clamped_and_non_finite_counts_as_zero(value: object, clamped: float) -> None:
    plugin = define_scheduler_plugin("odd", scorers=[{"id": "odd", "score": lambda request, node: value}])
    plan = plan_placement(request(gpus(1)), [dgx_h100()], POOL, plugins=[plugin])
    assert plan.ranked[0].scores["odd"] == clamped
    assert clamp_score(value) == clamped


def identical(*names: str) -> list[NodeView]:
    return [dgx_h100(name) for name in names]


def test_ties_break_on_node_id() -> None:
    plan = plan_placement(request(gpus(2)), identical("c", "a", "b"), POOL)
    assert [r.node_id for r in plan.ranked] == ["a", "b", "c"]
    assert plan.choice is plan.ranked[0]


def test_float_noise_does_not_break_ties() -> None:
    # 0.1 * 3 and 0.3 differ in the last bit; rounding makes them tie, so the node id decides.
    values = {"z": 0.1 * 3, "a": 0.3}
    plugin = define_scheduler_plugin("noise", scorers=[{"id": "noise", "score": lambda r, n: values[n.id]}])
    plan = plan_placement(request(gpus(1)), identical("z", "a"), POOL, plugins=[plugin])
    assert [r.node_id for r in plan.ranked] == ["a", "z"]


def test_the_choice_is_random_among_the_top_n_and_reproducible_with_a_seed() -> None:
    views = identical(*"abcdefgh")
    first = plan_placement(request(gpus(1)), views, POOL, random=random.Random(7).random)
    again = plan_placement(request(gpus(1)), views, POOL, random=random.Random(7).random)
    assert first.choice == again.choice
    expected = first.ranked[int(random.Random(7).random() * 5)]
    assert first.choice == expected
    chosen = {
        choice.node_id
        for seed in range(40)
        if (choice := plan_placement(request(gpus(1)), views, POOL, random=random.Random(seed).random).choice)
    }
    assert len(chosen) > 1
    assert chosen <= {"a", "b", "c", "d", "e"}


def test_top_n_bounds_the_choice() -> None:
    views = identical(*"abcdefgh")
    for seed in range(20):
        plan = plan_placement(request(gpus(1)), views, POOL, top_n=1, random=random.Random(seed).random)
        assert plan.choice is plan.ranked[0]
    few = plan_placement(request(gpus(1)), identical("a", "b"), POOL, top_n=5, random=lambda: 0.99)
    assert few.choice is not None and few.choice.node_id == "b"


NODES = st.lists(st.frozensets(st.integers(0, 7), max_size=8), min_size=1, max_size=6)


@given(NODES, st.integers(1, 8), st.sampled_from([None, {"spread": 0.5}, {"binpack": 0, "fragmentation": 2}]))
def test_count_scores_plus_the_link_part_is_the_plan_total(
    bookings: list[frozenset[int]], count: int, weights: dict[str, float] | None
) -> None:
    views = [dgx_h100(f"n{i}", booked=sorted(b)) for i, b in enumerate(bookings)]
    req = request(gpus(count))
    plan = plan_placement(req, views, POOL, weights=weights)
    topology_weight = (weights or {}).get("topology", 1.0)
    for ranked in plan.ranked:
        view = next(v for v in views if v.id == ranked.node_id)
        counts = count_scores(req, {"gpu": len(view.free)}, {"gpu": len(view.devices)}, weights)
        assert ranked.score == pytest.approx(counts + topology_weight * ranked.scores["topology"])
        assert ranked.score <= counts + max_link_dependent_score(req, weights) + 1e-9


def test_max_link_dependent_score_adds_image_cached_only_with_an_image() -> None:
    assert max_link_dependent_score(request(gpus(1))) == 1.0
    assert max_link_dependent_score(request(gpus(1), image_id="img")) == 1.5
    assert (
        max_link_dependent_score(request(gpus(1), image_id="img"), {"topology": 2, "image-cached": -1}) == 2.0
    )


def test_count_scores_sums_the_requested_classes() -> None:
    req = request(("gpu", 1), ("mig-1g.10gb", 1))
    # free 4 (2 + 2), total 8, picked 2: freeAfter 2 -> binpack 0.75, fragmentation 0.5.
    assert (
        count_scores(req, {"gpu": 2, "mig-1g.10gb": 2, "nic": 9}, {"gpu": 4, "mig-1g.10gb": 4})
        == 0.75 + 0.125
    )


def test_a_resource_only_request_ranks_nodes_without_devices() -> None:
    view = node("cpu", resources={"vcpu": Resource(8)})
    plan = plan_placement(request(resources={"vcpu": 2}), [view], POOL)
    assert only(plan) == {"binpack": 0.0, "topology": 1.0, "fragmentation": 1.0, "spread": 1.0}
    assert plan.ranked[0].atoms == ()
