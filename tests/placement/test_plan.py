"""plan_placement: the filters in the spec's order, scalars, device fit and the plan it returns."""

from __future__ import annotations

import dataclasses

import pytest

from capacity.placement import (
    ARCHIVED_REASON,
    EMPTY_POOL_REASON,
    Atom,
    DeviceRequest,
    Expression,
    NodeView,
    Plan,
    Pool,
    Rejection,
    Resource,
    define_scheduler_plugin,
    plan_placement,
    scalar_capacity,
)

from .builders import POOL, dgx_h100, gpus, ids, node, request, with_resources


def rejections(plan: Plan) -> list[tuple[str, str, str]]:
    return [(r.node_id, r.filter, r.reason) for r in plan.rejected]


def test_an_excluded_node_is_rejected_before_anything_else() -> None:
    view = dgx_h100("a", cordoned=True)
    plan = plan_placement(request(gpus(1), exclude_nodes=frozenset({"a"})), [view], POOL)
    assert rejections(plan) == [("a", "excluded", "excluded by the request")]


def test_a_node_left_out_after_a_lost_race_says_so_not_that_the_caller_excluded_it() -> None:
    asked = request(gpus(1), exclude_nodes=frozenset({"a"})).with_excluded("b")
    plan = plan_placement(asked, [dgx_h100("a"), dgx_h100("b")], POOL)
    assert rejections(plan) == [
        ("a", "excluded", "excluded by the request"),
        ("b", "excluded", "taken by a concurrent booking while this one was placed"),
    ]


def test_with_excluded_adds_a_node_to_the_request() -> None:
    req = request(gpus(1)).with_excluded("a").with_excluded("b")
    assert req.exclude_nodes == frozenset({"a", "b"})


def test_eligibility_rejections_use_the_eligible_filter() -> None:
    plan = plan_placement(request(gpus(1)), [dgx_h100("a", maintenance=True)], POOL)
    assert rejections(plan) == [("a", "eligible", "in maintenance")]


def test_a_dedicated_node_places_only_its_tenants_work() -> None:
    view = dgx_h100("a", no_schedule_reasons=("dedicated=acme",))
    assert plan_placement(request(gpus(1), tenant="acme"), [view], POOL).fits
    other = plan_placement(request(gpus(1), tenant="globex"), [view], POOL)
    assert rejections(other) == [("a", "eligible", "NoSchedule: dedicated=acme")]


class TestLabels:
    def test_the_first_missing_label_in_request_order_is_named(self) -> None:
        view = dgx_h100("a", labels={"rack": "r1"})
        req = request(gpus(1), node_labels={"bc.dev/driver.kata": "*", "rack": "r2"})
        assert rejections(plan_placement(req, [view], POOL)) == [
            ("a", "labels", "needs label bc.dev/driver.kata=*")
        ]
        req = request(gpus(1), node_labels={"rack": "r2", "bc.dev/driver.kata": "*"})
        assert rejections(plan_placement(req, [view], POOL)) == [("a", "labels", "needs label rack=r2")]

    def test_a_star_asks_only_for_the_label_to_exist(self) -> None:
        view = dgx_h100("a", labels={"bc.dev/driver.kata": "3.2", "rack": "r2"})
        req = request(gpus(1), node_labels={"bc.dev/driver.kata": "*", "rack": "r2"})
        assert plan_placement(req, [view], POOL).fits


class TestScalars:
    def test_100_times_0_29_is_29_units(self) -> None:
        assert scalar_capacity(100, 0.29) == 29
        assert Resource(100, 0.29).room == 29
        assert Resource(100, 0.29, allocated=9).room == 20
        view = with_resources(dgx_h100("a"), vcpu=Resource(100, 0.29))
        assert plan_placement(request(gpus(1), resources={"vcpu": 29}), [view], POOL).fits
        plan = plan_placement(request(gpus(1), resources={"vcpu": 30}), [view], POOL)
        assert rejections(plan) == [("a", "fits", "vcpu: 30 requested, 29 free")]

    def test_a_node_without_the_resource_row_has_none(self) -> None:
        view = with_resources(dgx_h100("a"), vcpu=Resource(64))
        plan = plan_placement(request(gpus(1), resources={"vcpu": 1, "memoryGiB": 4}), [view], POOL)
        assert rejections(plan) == [("a", "fits", "no memoryGiB")]

    def test_allocated_units_are_not_free(self) -> None:
        view = with_resources(dgx_h100("a"), memoryGiB=Resource(512, 1.0, allocated=500))
        plan = plan_placement(request(gpus(1), resources={"memoryGiB": 16}), [view], POOL)
        assert rejections(plan) == [("a", "fits", "memoryGiB: 16 requested, 12 free")]

    def test_a_zero_claim_needs_no_row(self) -> None:
        assert plan_placement(request(gpus(1), resources={"vcpu": 0}), [dgx_h100("a")], POOL).fits


class TestDeviceFit:
    def test_too_few_free_atoms(self) -> None:
        plan = plan_placement(request(gpus(4)), [dgx_h100("a", booked=range(7))], POOL)
        assert rejections(plan) == [("a", "fits", "1 of 4 gpu free")]

    def test_too_few_matching_the_selector(self) -> None:
        board = dgx_h100("a")
        slow = {a.id for a in board.devices[3:]}
        devices = tuple(
            dataclasses.replace(a, attributes={**a.attributes, "vramGiB": 40}) if a.id in slow else a
            for a in board.devices
        )
        view = dataclasses.replace(board, devices=devices, free=devices)
        selector = (Expression("vramGiB", "Gte", (80,)),)
        plan = plan_placement(request(gpus(4, selector=selector)), [view], POOL)
        assert rejections(plan) == [("a", "fits", "3 of 4 gpu free matching the selector")]
        fits = plan_placement(request(gpus(3, selector=selector)), [view], POOL)
        assert fits.ranked[0].atoms == (ids(view, 0, 1, 2),)

    def test_unhealthy_and_unbookable_free_atoms_do_not_count(self) -> None:
        board = dgx_h100("a", booked=range(2, 8))
        free = (
            dataclasses.replace(board.free[0], healthy=False),
            dataclasses.replace(board.free[1], bookable=False),
        )
        plan = plan_placement(request(gpus(1)), [dataclasses.replace(board, free=free)], POOL)
        assert rejections(plan) == [("a", "fits", "0 of 1 gpu free")]

    def test_the_class_must_match_exactly(self) -> None:
        plan = plan_placement(request(("mig-3g.40gb", 1)), [dgx_h100("a")], POOL)
        assert rejections(plan) == [("a", "fits", "0 of 1 mig-3g.40gb free")]

    def test_device_requests_do_not_share_atoms(self) -> None:
        plan = plan_placement(request(gpus(4), gpus(4)), [dgx_h100("a")], POOL)
        first, second = plan.ranked[0].atoms
        assert not set(first) & set(second) and len(first) == len(second) == 4
        assert plan.ranked[0].scores["fragmentation"] == 1.0
        short = plan_placement(request(gpus(4), gpus(5)), [dgx_h100("a")], POOL)
        assert rejections(short) == [("a", "fits", "4 of 5 gpu free")]

    def test_atoms_are_listed_per_device_request_in_request_order(self) -> None:
        view = dgx_h100("a")
        mig = Atom("a-MIG-9", "mig-1g.10gb", numa_node=0)
        view = dataclasses.replace(view, devices=(*view.devices, mig), free=(*view.free, mig))
        plan = plan_placement(request(("mig-1g.10gb", 1), gpus(2)), [view], POOL)
        assert plan.ranked[0].atoms == (("a-MIG-9",), ids(view, 0, 1))


def test_the_filters_run_in_the_spec_order() -> None:
    """A node failing several filters reports the first: excluded, eligibility, labels, scalars, plugin, fit."""
    seen: list[str] = []

    def spy(req: object, view: NodeView) -> object:
        seen.append(view.id)
        return {"reason": "plugin says no"} if view.id in {"plugin", "plugin-and-fit"} else True

    plugin = define_scheduler_plugin("spy", filters=[{"id": "spy.filter", "filter": spy}])
    cramped = with_resources(dgx_h100("x", booked=range(8)), vcpu=Resource(1))
    views = [
        dataclasses.replace(cramped, id="excluded", cordoned=True),
        dataclasses.replace(cramped, id="eligible", cordoned=True),
        dataclasses.replace(cramped, id="labels"),
        dataclasses.replace(cramped, id="scalars", labels={"rack": "a"}),
        dataclasses.replace(cramped, id="plugin", labels={"rack": "a"}, resources={"vcpu": Resource(8)}),
        dataclasses.replace(cramped, id="fit", labels={"rack": "a"}, resources={"vcpu": Resource(8)}),
    ]
    req = request(
        gpus(1), resources={"vcpu": 2}, node_labels={"rack": "a"}, exclude_nodes=frozenset({"excluded"})
    )
    plan = plan_placement(req, views, POOL, plugins=[plugin])
    assert rejections(plan) == [
        ("excluded", "excluded", "excluded by the request"),
        ("eligible", "eligible", "cordoned"),
        ("labels", "labels", "needs label rack=a"),
        ("scalars", "fits", "vcpu: 2 requested, 1 free"),
        ("plugin", "spy.filter", "plugin says no"),
        ("fit", "fits", "0 of 1 gpu free"),
    ]
    assert seen == ["plugin", "fit"]


def test_rejections_keep_the_order_nodes_were_given() -> None:
    views = [dgx_h100(name, cordoned=True) for name in "cab"]
    assert [r.node_id for r in plan_placement(request(gpus(1)), views, POOL).rejected] == ["c", "a", "b"]


def test_an_archived_pool_places_nothing() -> None:
    plan = plan_placement(request(gpus(1)), [dgx_h100("a")], Pool("pool-1", archived=True))
    assert (plan.ranked, plan.rejected, plan.choice, plan.fits) == ((), (), None, False)
    assert plan.pending_reason() == ARCHIVED_REASON == "the pool is archived"


def test_an_empty_pool_has_no_nodes() -> None:
    plan = plan_placement(request(gpus(1)), [], POOL)
    assert not plan.fits and plan.node_count == 0
    assert plan.pending_reason() == EMPTY_POOL_REASON == "the pool has no nodes"


def test_the_spec_pending_reason_example() -> None:
    views = [dgx_h100("a", booked=range(7)), dgx_h100("b", cordoned=True), dgx_h100("c", booked=range(1, 8))]
    plan = plan_placement(request(gpus(4)), views, POOL)
    assert (
        plan.pending_reason() == "no node fits (3 nodes): 2 \u00d7 fits: 1 of 4 gpu free; 1 \u00d7 cordoned"
    )


def test_a_plan_that_fits_has_no_pending_reason() -> None:
    plan = plan_placement(request(gpus(1)), [dgx_h100("a")], POOL)
    assert plan.fits and plan.pending_reason() == ""
    assert plan.node_count == 1


def test_nodes_may_be_any_iterable() -> None:
    plan = plan_placement(request(gpus(1)), (dgx_h100(n) for n in "ab"), POOL)
    assert plan.node_count == 2 and len(plan.ranked) == 2


def test_a_node_in_another_pool_is_rejected_without_a_bucket() -> None:
    plan = plan_placement(request(gpus(1)), [dgx_h100("a", pool_id="elsewhere")], POOL)
    assert plan.rejected == (Rejection("a", "eligible", "in another pool"),)


@pytest.mark.parametrize("count", [1, 2, 4, 8])
def test_every_pick_is_made_of_distinct_free_atoms(count: int) -> None:
    view = node("n", dgx_h100("n").devices, links=dgx_h100("n").links)
    plan = plan_placement(request(DeviceRequest("gpu", count)), [view], POOL)
    (atoms,) = plan.ranked[0].atoms
    assert len(set(atoms)) == count and set(atoms) <= {a.id for a in view.free}


def test_atoms_and_node_views_hash_by_id() -> None:
    view = dgx_h100("a")
    assert len({*view.devices, *view.free}) == 8
    assert {view, dataclasses.replace(view)} == {view}
