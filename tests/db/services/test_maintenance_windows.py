"""Maintenance windows on the database: placement, preview and earliest start keep off them; move; the switch.

Windows are read with the real clock (the placer loads those not yet over), so these tests book
relative to it: `soon(h)` is an offset from booking.NOW that lies `h` hours after the real now.
"""

from datetime import datetime, timedelta

import pytest

from capacity.audit import audit
from capacity.models import MaintenanceWindow, MaintenanceWindowNode
from capacity.placement import CapacityError
from capacity.services.earliest_start import earliest
from capacity.services.repair import repair_pools
from inventory import services as inventory
from inventory.models import Node
from maintenance import windows as maintenance

from booking import HOUR, MS, NOW, ask, atoms_of, config, from_real_now, reserve

pytestmark = pytest.mark.django_db


def at(offset: int) -> datetime:
    """Return the instant `offset` hours after booking.NOW."""
    return NOW + timedelta(hours=offset)


def iso(offset: int) -> str:
    return at(offset).isoformat()


def window(nodes=("node-a",), start=10, hours=4, **extra):
    """Schedule a window from `start` hours after the real now, for `hours`."""
    s = from_real_now(start)
    body = {"nodes": list(nodes), "start": iso(s), "end": iso(s + hours), **extra}
    return maintenance.schedule(body, by="operator"), s


def test_a_window_lists_the_bookings_it_overlaps_and_leaves_them(tenant, make_node):
    make_node("node-a", gpus=4)
    s = from_real_now(10)
    inside = reserve(ask(4, start=s + 1, hours=2)).reservation
    after = reserve(ask(4, start=s + 4, hours=2)).reservation  # starts as the window ends
    result, _ = window(start=10, hours=4)
    assert [(o.reservation, o.node, o.tenant) for o in result.overlaps] == [(inside.pk, "node-a", "acme")]
    assert (result.moved, result.waiting) == ([], [])
    assert atoms_of(inside)[0][0] == "node-a" and atoms_of(after)[0][0] == "node-a"
    assert MaintenanceWindowNode.objects.filter(window=result.window).count() == 1
    assert audit() == []  # a booking the window overlaps is listed, not drift


def test_placement_keeps_new_work_off_the_window_and_the_pending_reason_names_it(tenant, make_node):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    result, s = window(start=10, hours=4, reason="firmware")
    placed = reserve(ask(4, start=s + 2, hours=1)).reservation
    assert atoms_of(placed)[0][0] == "node-b"
    pending = reserve(ask(4, start=s + 2, hours=1)).reservation
    assert pending.status == "pending"
    message = pending.condition("Unschedulable")["message"]
    start, end = at(s).strftime("%Y-%m-%dT%H:%MZ"), at(s + 4).strftime("%Y-%m-%dT%H:%MZ")
    assert f"1 \u00d7 maintenance-window: window {result.window.pk}, {start} to {end}: firmware" in message
    # Outside the window node-a places again.
    assert atoms_of(reserve(ask(4, start=s + 4, hours=1)).reservation)[0][0] == "node-a"
    assert audit() == []


def test_the_preview_explains_the_window_per_node(tenant, make_node):
    from capacity import services

    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    result, s = window(start=10, hours=4)
    answer = services.preview(ask(1, start=s, hours=1), now=NOW, config=config(), explain=True)
    assert [c["nodeId"] for c in answer.candidates] == ["node-b"]
    (rejected,) = answer.plan.rejected
    assert (rejected.node_id, rejected.filter) == ("node-a", "maintenance-window")
    assert rejected.reason.startswith(f"window {result.window.pk}, ")


def test_earliest_start_proposes_the_end_of_the_window(tenant, make_node):
    make_node("node-a", gpus=4)
    _, s = window(start=10, hours=4)
    answer = earliest(ask(1, start=s - 1, hours=2), now=NOW, config=config())
    assert answer.fits and answer.window.start == MS + (s + 4) * HOUR


def test_move_moves_what_has_not_started_and_keeps_what_lies_outside(tenant, make_node):
    make_node("node-a", gpus=4)
    s = from_real_now(10)
    inside = reserve(ask(4, start=s + 1, hours=2)).reservation
    outside = reserve(ask(4, start=s + 8, hours=2)).reservation
    make_node("node-b", gpus=4)  # after the bookings, so that they are on node-a
    result, _ = window(start=10, hours=4, move=True)
    assert (result.moved, result.waiting) == ([inside.pk], [])
    assert atoms_of(inside)[0][0] == "node-b"
    assert atoms_of(outside)[0][0] == "node-a"
    inside.refresh_from_db()
    repaired = inside.condition("Repaired")
    assert repaired["reason"] == "MaintenanceWindow"
    assert f"node-a has maintenance window {result.window.pk}" in repaired["message"]
    assert audit() == []


def test_a_booking_with_nowhere_to_go_waits_and_moves_once_room_frees(tenant, make_node):
    from capacity import services

    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    s = from_real_now(10)
    blocker = reserve(ask(4, start=s, hours=6, excludeNodes=["node-a"])).reservation
    inside = reserve(ask(4, start=s + 1, hours=2)).reservation
    result, _ = window(start=10, hours=4, move=True)
    assert result.waiting == [inside.pk]
    inside.refresh_from_db()
    assert inside.condition("RepairPending") is not None
    services.release(blocker.pk)
    assert repair_pools([inside.pool_id]).repaired == [inside.pk]
    assert atoms_of(inside)[0][0] == "node-b"
    assert audit() == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T04:00:00Z"}, "start"),
        ({"end": "BEFORE"}, "end"),
        ({"nodes": ["node-a", "nope"]}, "nodes"),
        ({"pool": "lab-pool"}, "nodes"),
        ({"nodes": None}, "nodes"),
        ({"move": "yes"}, "move"),
    ],
)
def test_bad_input_is_invalid_input_naming_the_field_and_writes_nothing(tenant, make_node, change, field):
    make_node("node-a", gpus=2)
    s = from_real_now(10)
    body = {"nodes": ["node-a"], "start": iso(s), "end": iso(s + 2), **change}
    if body["end"] == "BEFORE":
        body["end"] = iso(s - 1)
    if body["nodes"] is None:
        del body["nodes"]
    with pytest.raises(CapacityError) as err:
        maintenance.schedule(body)
    assert err.value.code == "INVALID_INPUT"
    assert err.value.message.startswith(field), err.value.message
    assert not MaintenanceWindow.objects.exists() and not MaintenanceWindowNode.objects.exists()


def test_a_pool_window_takes_every_node_of_the_pool(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    s = from_real_now(10)
    result = maintenance.schedule({"pool": "lab-pool", "start": iso(s), "end": iso(s + 1)})
    assert maintenance.node_names([result.window]) == {result.window.pk: ["node-a", "node-b"]}
    assert result.window.pool.slug == "lab-pool"


def test_the_worker_puts_the_nodes_in_maintenance_at_the_start_and_takes_them_out_at_the_end(
    tenant, make_node
):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    inventory.set_maintenance("node-b", True, reason="the operator's own")
    _result, s = window(nodes=("node-a", "node-b"), start=10, hours=4)
    assert maintenance.switch_windows(at(s) - timedelta(minutes=1)) == (0, 0)
    assert maintenance.switch_windows(at(s)) == (1, 0)
    assert Node.objects.get(name="node-a").maintenance and Node.objects.get(name="node-b").maintenance
    switched = dict(MaintenanceWindowNode.objects.values_list("node__name", "switched"))
    assert switched == {"node-a": True, "node-b": False}
    assert maintenance.switch_windows(at(s + 4)) == (0, 1)
    # The window takes out the node it put in, never the one an operator had put in maintenance.
    assert not Node.objects.get(name="node-a").maintenance
    assert Node.objects.get(name="node-b").maintenance
    assert maintenance.switch_windows(at(s + 5)) == (0, 0)


def test_overlapping_windows_hand_the_node_over_and_the_last_takes_it_out(tenant, make_node):
    make_node("node-a", gpus=2)
    first, s = window(start=10, hours=2)
    second = maintenance.schedule({"nodes": ["node-a"], "start": iso(s + 1), "end": iso(s + 4)}).window
    maintenance.switch_windows(at(s))
    maintenance.switch_windows(at(s + 1))  # the second finds the node in maintenance (the first's)
    switched = dict(MaintenanceWindowNode.objects.values_list("window", "switched"))
    assert switched == {first.window.pk: True, second.pk: False}
    maintenance.switch_windows(at(s + 2))  # the first ends while the second runs: it hands over
    assert Node.objects.get(name="node-a").maintenance
    assert MaintenanceWindowNode.objects.get(window=second).switched
    maintenance.switch_windows(at(s + 4))
    assert not Node.objects.get(name="node-a").maintenance


def test_a_windows_maintenance_moves_only_what_starts_before_its_end(tenant, make_node):
    """At the start, BookingRepair moves the bookings the window's maintenance breaks: those that
    run in it, not those booked after its end."""
    make_node("node-a", gpus=4)
    s = from_real_now(10)
    inside = reserve(ask(4, start=s + 1, hours=2)).reservation
    after = reserve(ask(4, start=s + 6, hours=2)).reservation
    make_node("node-b", gpus=4)
    window(start=10, hours=4)
    maintenance.switch_windows(at(s))
    assert Node.objects.get(name="node-a").maintenance
    repair_pools([inside.pool_id], now=at(s))
    assert atoms_of(inside)[0][0] == "node-b"
    assert atoms_of(after)[0][0] == "node-a"
    assert audit() == []


def test_deleting_a_running_window_takes_its_nodes_out_of_maintenance(tenant, make_node):
    make_node("node-a", gpus=2)
    result, s = window(start=10, hours=4)
    maintenance.switch_windows(at(s))
    maintenance.cancel(result.window.pk, now=at(s + 1))
    assert not Node.objects.get(name="node-a").maintenance
    assert not MaintenanceWindow.objects.exists()
    with pytest.raises(CapacityError) as err:
        maintenance.cancel(result.window.pk)
    assert err.value.code == "NOT_FOUND"


def test_a_plan_made_before_the_window_loses_its_commit(tenant, make_node):
    """A placer that planned on the index before the window was scheduled commits after it: the
    guarded commit sees the window and answers a lost race (the replan then keeps off the node)."""
    from capacity.placers.commit import LostRace, Owner, commit_member
    from capacity.placers.loader import load_pool
    from capacity.placers.reads import plan_request
    from capacity.services.inputs import normalize

    make_node("node-a", gpus=2)
    s = from_real_now(10)
    core, _extra = normalize(ask(1, start=s, hours=1), now=NOW)
    from capacity.placement import validate_request

    request = validate_request({**core, "reservationId": "new"})
    pool = load_pool("lab-pool")
    plan, index = plan_request(request, pool, config())
    assert plan.choice is not None and plan.choice.node_id == "node-a"
    window(start=10, hours=2)
    with pytest.raises(LostRace) as lost:
        commit_member(request, plan.choice, pool, index, Owner(instance_id="probe"), last=False)
    assert lost.value.reason == "node-a is no longer schedulable"


def test_windows_filter_by_pool_node_and_active(tenant, make_node):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    first, s = window(nodes=("node-a",), start=10, hours=4)
    second, _ = window(nodes=("node-b",), start=20, hours=4)
    assert list(maintenance.windows(node="node-b")) == [second.window]
    assert list(maintenance.windows(pool="lab-pool")) == [first.window, second.window]
    assert list(maintenance.windows(active=True, now=at(s + 1))) == [first.window]
    assert list(maintenance.windows(active=False, now=at(s + 1))) == [second.window]


def test_scheduling_tells_node_subscribers(tenant, make_node, django_user_model):
    from webhooks.models import Event, Subscription

    operator = django_user_model.objects.create_user("op", is_staff=True)
    Subscription.objects.create(
        owner=operator, url="https://example.com/hook", events=["node.maintenance_scheduled"]
    )
    make_node("node-a", gpus=2)
    result, s = window(start=10, hours=4, reason="firmware")
    event = Event.objects.get(type="node.maintenance_scheduled")
    start, end = at(s).strftime("%Y-%m-%dT%H:%MZ"), at(s + 4).strftime("%Y-%m-%dT%H:%MZ")
    assert event.node_id == Node.objects.get(name="node-a").pk
    assert event.reason == f"window {result.window.pk}, {start} to {end}: firmware"
