"""Scheduler plugins: the spec's examples, pickers, admission and registration."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from capacity.placement import (
    Atom,
    CapacityError,
    DeviceRequest,
    NodeView,
    Picker,
    PlacementRequest,
    PluginConfigError,
    PluginFilter,
    PluginScorer,
    Reject,
    SchedulerPlugin,
    define_scheduler_plugin,
    join_plugins,
    plan_placement,
    run_admit,
)

from .builders import POOL, dgx_h100, gpus, ids, pcie_box, request

power_tier = define_scheduler_plugin(
    "power-tier",
    scorers=[
        {
            "id": "power-tier.low",
            "weight": 0.5,
            "score": lambda _request, node: 1 if node.labels.get("power-tier") == "low" else 0,
        }
    ],
    filters=[
        {
            "id": "power-tier.no-drain",
            "filter": lambda _request, node: (
                {"reason": "rack is draining"} if node.labels.get("power-tier") == "draining" else True
            ),
        }
    ],
)

rack_affinity = define_scheduler_plugin(
    "rack-affinity",
    filters=[
        {
            "id": "no-quarantine-rack",
            "filter": lambda request, node: (
                {"reason": "rack r13 is quarantined"} if node.labels.get("rack") == "r13" else True
            ),
        }
    ],
    scorers=[
        {
            "id": "rack-a",
            "weight": 0.5,
            "score": lambda request, node: 1 if node.labels.get("rack", "").startswith("a") else 0,
        }
    ],
)


def test_the_power_tier_example() -> None:
    node_a = dgx_h100("a", labels={"power-tier": "high"})
    node_b = dgx_h100("b", labels={"power-tier": "low"})
    node_c = dgx_h100("c", labels={"power-tier": "draining"})
    plan = plan_placement(request(gpus(1)), [node_a, node_b, node_c], POOL, plugins=[power_tier])
    assert plan.ranked[0].node_id == "b"
    assert plan.ranked[0].scores["power-tier.low"] == 1
    assert plan.ranked[0].score - plan.ranked[1].score == pytest.approx(0.5)
    assert [(r.node_id, r.filter, r.reason) for r in plan.rejected] == [
        ("c", "power-tier.no-drain", "rack is draining")
    ]
    weighted = plan_placement(
        request(gpus(1)),
        [node_a, node_b],
        POOL,
        plugins=[power_tier],
        weights={"power-tier.low": 0.75, "spread": 0.25},
    )
    assert weighted.ranked[0].score - weighted.ranked[1].score == pytest.approx(0.75)


def test_the_rack_affinity_example() -> None:
    views = [
        dgx_h100("n1", labels={"rack": "b7"}),
        dgx_h100("n2", labels={"rack": "a3"}),
        dgx_h100("n3", labels={"rack": "r13"}),
    ]
    plan = plan_placement(request(gpus(2)), views, POOL, plugins=[rack_affinity])
    assert [r.node_id for r in plan.ranked] == ["n2", "n1"]
    assert plan.ranked[0].score - plan.ranked[1].score == pytest.approx(0.5)
    assert plan.rejected[0].filter == "no-quarantine-rack"
    assert plan.rejected[0].reason == "rack r13 is quarantined"
    assert plan.pending_reason() == ""


def test_define_scheduler_plugin_freezes_mappings_into_typed_parts() -> None:
    plugin = rack_affinity
    assert isinstance(plugin, SchedulerPlugin)
    assert isinstance(plugin.filters[0], PluginFilter) and plugin.filters[0].id == "no-quarantine-rack"
    assert plugin.scorers[0] == PluginScorer("rack-a", plugin.scorers[0].score, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plugin.id = "other"  # type: ignore[misc]
    picker = define_scheduler_plugin(
        "p", prefer_allocation=[{"class": "gpu", "pick": lambda d, free, n: None}]
    )
    assert picker.prefer_allocation[0].device_class == "gpu"
    typed = define_scheduler_plugin(
        "t",
        filters=[PluginFilter("f", lambda r, n: True)],
        prefer_allocation=[Picker("gpu", lambda d, f, n: None)],
    )
    assert typed.filters[0].id == "f"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"filters": [{"filter": lambda r, n: True}]}, 'scheduler plugin "p": filter needs "id"'),
        ({"filters": [{"id": "f", "filter": 3}]}, 'scheduler plugin "p": filter "f" must be callable'),
        (
            {"scorers": [{"id": "s", "score": lambda r, n: 1, "weight": "high"}]},
            'scheduler plugin "p": scorer "s" weight must be a number',
        ),
        (
            {"scorers": [{"id": "s", "score": lambda r, n: 1}, {"id": "s", "score": lambda r, n: 0}]},
            'duplicate scheduler scorer id "s"',
        ),
        (
            {"prefer_allocation": [{"pick": lambda d, f, n: None}]},
            'scheduler plugin "p": picker needs "class"',
        ),
    ],
)
def test_malformed_plugins_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginConfigError) as info:
        define_scheduler_plugin("p", **kwargs)
    assert str(info.value) == message


def test_filters_answer_true_reject_or_a_reason() -> None:
    answers: dict[str, object] = {
        "a": True,
        "b": Reject("no b"),
        "c": {"reason": "no c"},
        "d": False,
        "e": "maybe",
    }
    plugin = define_scheduler_plugin(
        "answers", filters=[{"id": "answers", "filter": lambda r, n: answers[n.id]}]
    )
    plan = plan_placement(request(gpus(1)), [dgx_h100(n) for n in answers], POOL, plugins=[plugin])
    assert [r.node_id for r in plan.ranked] == ["a"]
    assert [r.reason for r in plan.rejected] == [
        "no b",
        "no c",
        "rejected",
        "filter returned an invalid answer",
    ]


def test_plugin_filters_run_in_plugin_order_then_filter_order() -> None:
    calls: list[str] = []

    def recorder(name: str) -> Any:
        def record(req: PlacementRequest, view: NodeView) -> bool:
            calls.append(name)
            return True

        return record

    first = define_scheduler_plugin(
        "first", filters=[{"id": "f1", "filter": recorder("f1")}, {"id": "f2", "filter": recorder("f2")}]
    )
    second = define_scheduler_plugin("second", filters=[{"id": "s1", "filter": recorder("s1")}])
    plan_placement(request(gpus(1)), [dgx_h100("a")], POOL, plugins=[first, second])
    assert calls == ["f1", "f2", "s1"]


class TestPickers:
    def picker(self, plugin_id: str, pick: Any, cls: str = "gpu") -> SchedulerPlugin:
        return define_scheduler_plugin(plugin_id, prefer_allocation=[{"class": cls, "pick": pick}])

    def test_a_picker_for_the_class_wins(self) -> None:
        view = dgx_h100("a")
        last_two = self.picker("last", lambda d, free, n: free[-2:])
        plan = plan_placement(request(gpus(2)), [view], POOL, plugins=[last_two])
        assert plan.ranked[0].atoms == (ids(view, 6, 7),)

    def test_a_picker_for_another_class_is_ignored(self) -> None:
        view = dgx_h100("a")
        never = self.picker("mig", lambda d, free, n: pytest.fail("called"), cls="mig-1g.10gb")
        assert plan_placement(request(gpus(2)), [view], POOL, plugins=[never]).ranked[0].atoms == (
            ids(view, 0, 1),
        )

    def test_none_falls_through_to_the_next_picker_then_the_default(self) -> None:
        view = dgx_h100("a")
        seen: list[str] = []

        def abstain(d: DeviceRequest, free: list[Atom], n: NodeView) -> None:
            seen.append("abstain")

        def last(d: DeviceRequest, free: list[Atom], n: NodeView) -> Sequence[Atom]:
            seen.append("last")
            return free[-1:]

        plan = plan_placement(
            request(gpus(1)), [view], POOL, plugins=[self.picker("a", abstain), self.picker("b", last)]
        )
        assert plan.ranked[0].atoms == (ids(view, 7),) and seen == ["abstain", "last"]
        default = plan_placement(request(gpus(1)), [view], POOL, plugins=[self.picker("a", abstain)])
        assert default.ranked[0].atoms == (ids(view, 0),)

    def test_the_picker_sees_the_request_and_the_candidates(self) -> None:
        view = dgx_h100("a", booked=[0, 1])
        got: dict[str, Any] = {}

        def spy(d: DeviceRequest, free: list[Atom], n: NodeView) -> None:
            got.update(request=d, free=[a.id for a in free], node=n.id)

        plan_placement(request(gpus(3)), [view], POOL, plugins=[self.picker("spy", spy)])
        assert got == {"request": gpus(3), "free": list(ids(view, 2, 3, 4, 5, 6, 7)), "node": "a"}

    @pytest.mark.parametrize(
        ("pick", "reason"),
        [
            (lambda d, free, n: free[:1], "picker returned an invalid allocation: 1 atoms for 2 gpu"),
            (
                lambda d, free, n: [free[0], free[0]],
                "picker returned an invalid allocation: atom a-GPU-2 twice",
            ),
            (
                lambda d, free, n: [free[0], n.devices[0]],
                "picker returned an invalid allocation: atom a-GPU-0 is not a free candidate",
            ),
            (
                lambda d, free, n: ["a-GPU-2", "a-GPU-3"],
                "picker returned an invalid allocation: not a list of atoms",
            ),
            (lambda d, free, n: "a-GPU-2", "picker returned an invalid allocation: not a list of atoms"),
        ],
    )
    def test_an_invalid_pick_rejects_the_node_with_the_plugin_id(self, pick: Any, reason: str) -> None:
        plan = plan_placement(
            request(gpus(2)), [dgx_h100("a", booked=[0, 1])], POOL, plugins=[self.picker("bad", pick)]
        )
        assert [(r.filter, r.reason) for r in plan.rejected] == [("bad", reason)]

    def test_nvlink_all_is_checked_on_a_pickers_pick(self) -> None:
        across = self.picker("across", lambda d, free, n: [free[0], free[-1]])
        plan = plan_placement(
            request(gpus(2), topology="nvlink-all"), [pcie_box("a")], POOL, plugins=[across]
        )
        assert [(r.filter, r.reason) for r in plan.rejected] == [
            ("topology", "no 2 gpu fully connected by NVLink")
        ]
        scored = plan_placement(request(gpus(2)), [pcie_box("a")], POOL, plugins=[across])
        assert scored.ranked[0].scores["topology"] == 0.0


def test_join_plugins_puts_settings_first_and_refuses_duplicate_ids() -> None:
    a, b = define_scheduler_plugin("a"), define_scheduler_plugin("b")
    assert join_plugins([a], [b]) == (a, b)
    with pytest.raises(PluginConfigError) as info:
        join_plugins([a, b], [define_scheduler_plugin("a")])
    assert str(info.value) == 'duplicate scheduler plugin id "a"'
    assert isinstance(info.value, ValueError)


def test_two_plugins_may_not_share_a_scorer_id() -> None:
    one = define_scheduler_plugin("one", scorers=[{"id": "s", "score": lambda r, n: 1}])
    two = define_scheduler_plugin("two", scorers=[{"id": "s", "score": lambda r, n: 0}])
    with pytest.raises(PluginConfigError, match='duplicate scheduler scorer id "s"'):
        join_plugins([one], [two])


def test_admit_hooks_run_in_order_and_a_capacity_error_refuses() -> None:
    calls: list[str] = []

    def gang_cap(req: PlacementRequest, context: dict[str, str]) -> None:
        calls.append("gang-cap")
        if req.gang and req.gang.size > 8 and context["identity_kind"] == "agent":
            raise CapacityError("UNSUPPORTED", "Agents may book gangs of at most 8 nodes")

    first = define_scheduler_plugin("first", admit=lambda req, ctx: calls.append("first"))
    cap = define_scheduler_plugin("gang-cap", admit=gang_cap)
    from capacity.placement import Gang

    run_admit([first, cap], request(gpus(1), gang=Gang(4)), {"identity_kind": "agent"})
    assert calls == ["first", "gang-cap"]
    with pytest.raises(CapacityError) as info:
        run_admit([first, cap], request(gpus(1), gang=Gang(9)), {"identity_kind": "agent"})
    assert (info.value.code, info.value.message) == (
        "UNSUPPORTED",
        "Agents may book gangs of at most 8 nodes",
    )


def test_capacity_error_codes_are_checked() -> None:
    assert CapacityError("CONFLICT", "x").code == "CONFLICT"
    with pytest.raises(ValueError):
        CapacityError("OOPS", "x")
