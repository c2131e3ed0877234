"""Maintenance windows in the pure core: placement, leases, earliest start and the availability chart."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from capacity.placement import (
    WINDOW_FILTER,
    MaintenanceSpan,
    PlacementRequest,
    Window,
    overlapping,
    plan_placement,
    summarize,
    window_reason,
)
from capacity.placement.availability import HOUR_MS, availability
from capacity.placement.earliest import NodeTime, Shape, earliest_start, moments, passes
from capacity.placement.lease import plan_lease
from capacity.placement.maintenance import stamp
from capacity.placement.satisfiable import emptied

from .builders import DAY, POOL, dgx_h100, gpus, request

H = 3_600_000
# 2026-12-08T00:00Z to 12:00Z.
TUESDAY = 1_796_688_000_000
FIRMWARE = MaintenanceSpan("7", TUESDAY, TUESDAY + 12 * H, "firmware")


def at(start: int, hours: int = 1) -> Window:
    return Window(start, start + hours * H)


def asking(*devices, during: Window) -> PlacementRequest:
    """Return the builders' request over `during` rather than their DAY."""
    return dataclasses.replace(request(*devices), during=during)


def test_the_reason_names_the_window_its_span_and_why() -> None:
    assert window_reason(FIRMWARE) == "window 7, 2026-12-08T00:00Z to 2026-12-08T12:00Z: firmware"
    assert window_reason(MaintenanceSpan("8", TUESDAY + 1500, TUESDAY + H)) == (
        "window 8, 2026-12-08T00:00:01Z to 2026-12-08T01:00Z"
    )


def test_a_window_is_half_open_like_bookings() -> None:
    assert overlapping([FIRMWARE], TUESDAY - H, TUESDAY) is None  # ends as the window starts
    assert overlapping([FIRMWARE], TUESDAY + 12 * H, TUESDAY + 13 * H) is None  # starts as it ends
    assert overlapping([FIRMWARE], TUESDAY + 11 * H, TUESDAY + 13 * H) is FIRMWARE


def test_the_planner_turns_down_a_node_whose_window_overlaps_the_request_and_names_it() -> None:
    closed = dgx_h100("a", windows=(FIRMWARE,))
    other = dgx_h100("b")
    plan = plan_placement(asking(gpus(8), during=at(TUESDAY + 2 * H)), [closed, other], POOL)
    assert [r.node_id for r in plan.ranked] == ["b"]
    (rejection,) = plan.rejected
    assert (rejection.node_id, rejection.filter) == ("a", WINDOW_FILTER)
    assert rejection.reason == "window 7, 2026-12-08T00:00Z to 2026-12-08T12:00Z: firmware"


def test_outside_the_window_the_node_places_as_before() -> None:
    closed = dgx_h100("a", windows=(FIRMWARE,))
    before = plan_placement(asking(gpus(8), during=at(TUESDAY - 3 * H, 3)), [closed], POOL)
    after = plan_placement(asking(gpus(8), during=at(TUESDAY + 12 * H)), [closed], POOL)
    assert before.fits and after.fits


def test_the_pending_reason_groups_nodes_by_the_window_that_closes_them() -> None:
    views = [dgx_h100(name, windows=(FIRMWARE,)) for name in ("a", "b")]
    plan = plan_placement(asking(gpus(1), during=at(TUESDAY)), views, POOL)
    assert not plan.fits
    assert summarize(plan.rejected, 2) == (
        "no node fits (2 nodes): 2 \u00d7 maintenance-window: window 7, 2026-12-08T00:00Z to 2026-12-08T12:00Z: firmware"
    )


def test_a_lease_is_turned_down_on_a_node_in_a_window() -> None:
    lease = dataclasses.replace(request(), during=at(TUESDAY + H), lease=True)
    plan = plan_lease(lease, [dgx_h100("a", windows=(FIRMWARE,))], POOL, {})
    assert not plan.fits
    assert plan.rejected[0].filter == WINDOW_FILTER


def test_the_never_fits_check_ignores_windows_they_pass() -> None:
    assert emptied(dgx_h100("a", windows=(FIRMWARE,))).windows == ()


def test_earliest_start_skips_a_window_and_proposes_its_end() -> None:
    """
    One idle node of 4 GPUs with a window over [2h, 6h); a 3h request from 0h cannot start before
    6h: [0h, 3h) overlaps the window. Its end is one of the moments searched.
    """
    node = NodeTime(atoms={"gpu": [0, 1, 2, 3]}, busy={}, capacity={}, held={}, closed=((2 * H, 6 * H),))
    shape = Shape(need={"gpu": 1}, claims={}, duration=3 * H)
    assert not passes(node, shape, 0)
    assert passes(node, shape, 6 * H)
    assert moments(node, 0, 10 * H) == [0, 6 * H]
    found = earliest_start(shape, {"n": node}, 0, 10 * H, lambda start, names: object())
    assert found == (6 * H, ["n"])


def test_a_request_ending_as_the_window_starts_fits_before_it() -> None:
    node = NodeTime(atoms={"gpu": [0]}, busy={}, capacity={}, held={}, closed=((2 * H, 6 * H),))
    shape = Shape(need={"gpu": 1}, claims={}, duration=2 * H)
    assert passes(node, shape, 0)


def test_a_whole_node_lease_waits_for_the_window_too() -> None:
    node = NodeTime(atoms={"gpu": [0]}, busy={}, capacity={}, held={}, closed=((0, 4 * H),))
    assert not passes(node, Shape(need={}, claims={}, duration=H, whole_node=True), H)


def test_the_availability_chart_counts_a_windowed_nodes_atoms_as_taken_in_its_hours() -> None:
    start = TUESDAY - 2 * H
    views = [dgx_h100("a", windows=(FIRMWARE,)), dgx_h100("b")]
    chart = availability(views, {}, start, 16)
    # Hours from 22:00: two before the window, twelve in it, two after.
    assert chart.free["gpu"] == (16,) * 2 + (8,) * 12 + (16,) * 2
    assert chart.nvlink == (8,) * 16  # b keeps its whole NVLink block throughout
    assert chart.starts[2] == TUESDAY and HOUR_MS == H


def test_a_request_with_every_node_closed_for_part_of_its_window_does_not_fit() -> None:
    req: PlacementRequest = asking(gpus(1), during=Window(DAY.start, TUESDAY + H))
    plan = plan_placement(req, [dgx_h100("a", windows=(FIRMWARE,))], POOL)
    assert not plan.fits


def test_stamps_agree_with_the_calendar() -> None:
    for ms in (0, 951_782_400_000, 1_709_164_800_000, 4_107_542_399_000, TUESDAY + 90_061_000):
        at_ = datetime.fromtimestamp(ms / 1000, UTC)
        expected = at_.strftime("%Y-%m-%dT%H:%M:%SZ" if at_.second else "%Y-%m-%dT%H:%MZ")
        assert stamp(ms) == expected
