"""A booking is told before a maintenance window takes its GPUs: condition, event, audit (issue 57, item 2).

Windows and repairs read the real clock, so bookings are placed relative to it (booking.from_real_now);
a running one is booked as of its own start.
"""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from agents.assignments import assignments
from capacity.models import Reservation
from capacity.services.repair import repair_pools
from maintenance import windows as maintenance
from trail.models import AuditRecord
from webhooks.models import Event, Subscription

from booking import NOW, ask, atoms_of, booked_at, from_real_now, reserve

pytestmark = pytest.mark.django_db

KINDS = ["reservation.maintenance_scheduled", "reservation.maintenance_cancelled", "reservation.repaired"]


def at(offset: int) -> datetime:
    return NOW + timedelta(hours=offset)


def stamp(offset: int) -> str:
    return at(offset).strftime("%Y-%m-%dT%H:%MZ")


def running(gpus=4, hours=48, **extra) -> Reservation:
    """Book a reservation that started an hour or two before the real now."""
    data = ask(gpus, start=from_real_now(-2), hours=hours, **extra)
    return reserve(data, now=booked_at(data)).reservation


def later(start: int, gpus=4, hours=2, **extra) -> Reservation:
    return reserve(ask(gpus, start=start, hours=hours, **extra)).reservation


def schedule(start: int, hours=4, nodes=("node-a",), **extra):
    body = {"nodes": list(nodes), "start": at(start).isoformat(), "end": at(start + hours).isoformat()}
    return maintenance.schedule({**body, **extra}, by="ops-alice")


def told(reservation: Reservation) -> dict | None:
    reservation.refresh_from_db()
    return reservation.condition("MaintenanceScheduled")


@pytest.fixture
def hooked(django_user_model):
    """A subscriber to the reservation events of interest (triggers write events only while one is)."""
    owner = django_user_model.objects.create_user("op-hook", is_staff=True)
    Subscription.objects.create(owner=owner, url="https://example.com/hook", events=KINDS)


def events(reservation: Reservation) -> list[tuple[str, str]]:
    rows = Event.objects.filter(reservation_id=reservation.pk, type__in=KINDS).order_by("id")
    return list(rows.values_list("type", "reason"))


def test_a_running_booking_is_told_with_the_window_its_start_and_reason(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    busy = running()
    s = from_real_now(10)
    result = schedule(s, reason="firmware", move=True)
    w = result.window.pk
    condition = told(busy)
    expected = (
        f"maintenance window {w} on node-a, {stamp(s)} to {stamp(s + 4)}: firmware. "
        "What this booking holds there is moved off at the window's start"
    )
    assert condition == {
        "type": "MaintenanceScheduled",
        "status": "True",
        "reason": "MaintenanceWindow",
        "message": expected,
        "window": w,
        "at": at(s).isoformat(),
        "end": at(s + 4).isoformat(),
        "windowReason": "firmware",
        "nodes": ["node-a"],
    }
    assert result.told == [busy.pk]
    assert events(busy) == [("reservation.maintenance_scheduled", expected)]
    # The node's agent hears of it with the devices the booking holds now.
    feed, _ = assignments("node-a")
    held = {d["now"]["reservationId"]: d["now"]["maintenance"] for d in feed["devices"] if d["now"]}
    assert held[busy.pk] == {
        "windowId": w,
        "start": at(s).isoformat().replace("+00:00", "Z"),
        "end": at(s + 4).isoformat().replace("+00:00", "Z"),
        "reason": "firmware",
        "nodes": ["node-a"],
        "message": expected,
    }


def test_move_moves_future_work_untold_and_a_booking_ending_before_gets_nothing(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    s = from_real_now(10)
    before = later(s - 4, hours=3)  # ends an hour before the window starts
    inside = later(s + 1)
    make_node("node-b", gpus=4)  # after the bookings: they are on node-a
    result = schedule(s, move=True)
    assert result.moved == [inside.pk] and result.told == []
    assert atoms_of(inside)[0][0] == "node-b"
    assert told(inside) is None and told(before) is None
    assert events(inside)[0][0] == "reservation.repaired"
    assert [kind for kind, _ in events(inside)] == ["reservation.repaired"]
    assert events(before) == []


def test_without_move_every_booking_it_overlaps_is_told(tenant, make_node, hooked):
    make_node("node-a", gpus=8)
    busy = running(gpus=4)
    s = from_real_now(10)
    inside = later(s + 1)
    result = schedule(s)
    assert sorted(result.told) == sorted([busy.pk, inside.pk])
    assert told(busy)["status"] == told(inside)["status"] == "True"


def test_a_booking_with_no_room_to_move_to_is_told_and_untold_once_moved(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    s = from_real_now(10)
    blocker = later(s, hours=6, excludeNodes=["node-a"])
    inside = later(s + 1)  # node-b is full then
    result = schedule(s, move=True)
    assert result.waiting == [inside.pk]
    assert told(inside)["window"] == result.window.pk  # it stays on node-a: the window takes it
    from capacity import services

    services.release(blocker.pk)
    assert repair_pools([inside.pool_id]).repaired == [inside.pk]
    assert told(inside) is None


def test_cancelling_turns_the_condition_false_and_says_so(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    busy = running()
    s = from_real_now(10)
    w = schedule(s, reason="firmware").window.pk
    maintenance.cancel(w)
    condition = told(busy)
    message = f"maintenance window {w} on node-a was cancelled: nothing moves for it"
    assert condition == {
        "type": "MaintenanceScheduled",
        "status": "False",
        "reason": "WindowCancelled",
        "message": message,
        "window": w,
    }
    assert [kind for kind, _ in events(busy)] == [
        "reservation.maintenance_scheduled",
        "reservation.maintenance_cancelled",
    ]
    assert events(busy)[-1][1] == message
    feed, _ = assignments("node-a")
    assert all(d["now"]["maintenance"] is None for d in feed["devices"] if d["now"])


def test_cancelling_one_of_two_windows_names_the_other(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    busy = running()
    s = from_real_now(10)
    first = schedule(s).window.pk
    second = schedule(s + 8, reason="cooling").window.pk
    assert told(busy)["window"] == first  # the soonest
    maintenance.cancel(first)
    assert told(busy)["window"] == second and told(busy)["windowReason"] == "cooling"
    assert [kind for kind, _ in events(busy)] == ["reservation.maintenance_scheduled"] * 2


def test_the_window_s_start_moves_the_running_work_and_the_condition_goes(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    busy = running()
    make_node("node-b", gpus=4)
    s = from_real_now(0)
    schedule(s)
    maintenance.switch_windows(at(s))
    repair_pools([busy.pool_id], now=timezone.now())
    assert atoms_of(busy)[0][0] == "node-b"
    assert told(busy) is None
    assert busy.condition("Repaired") is not None


def test_a_window_that_ends_drops_the_condition_of_work_it_could_not_move(tenant, make_node, hooked):
    make_node("node-a", gpus=4)
    busy = running(hours=96)
    s = from_real_now(0)
    schedule(s)
    maintenance.switch_windows(at(s))
    assert told(busy)["status"] == "True"  # nowhere to go: it stays, RepairPending
    maintenance.switch_windows(at(s + 4))
    assert told(busy) is None
    assert [kind for kind, _ in events(busy)] == ["reservation.maintenance_scheduled"]


def test_scheduling_and_deleting_are_in_the_audit_with_who_and_what(tenant, make_node):
    make_node("node-a", gpus=4)
    s = from_real_now(10)
    w = schedule(s, reason="firmware").window.pk
    maintenance.cancel(w)
    rows = list(AuditRecord.objects.filter(object=f"maintenance:{w}").order_by("id"))
    window = {
        "nodes": ["node-a"],
        "pool": None,
        "start": at(s).isoformat(),
        "end": at(s + 4).isoformat(),
        "reason": "firmware",
        "move": False,
    }
    assert [(r.action, r.actor, r.before, r.after, r.reason) for r in rows] == [
        ("maintenance.schedule", "ops-alice", None, window, "firmware"),
        ("maintenance.delete", "system", window, None, ""),
    ]


def test_a_window_changed_in_place_tells_its_bookings_again(tenant, make_node, hooked):
    from capacity.models import MaintenanceWindow, MaintenanceWindowNode

    make_node("node-a", gpus=8)
    s = from_real_now(10)
    first = later(s + 1, hours=1)  # inside [s, s+4)
    second = later(s + 3, hours=1)
    result = schedule(s, hours=4)
    w = result.window.pk
    assert sorted(result.told) == sorted([first.pk, second.pk])
    # Shortened to [s, s+2): the second booking is no longer in it (as a Slurm reservation's end moved).
    for rows in (MaintenanceWindow.objects.filter(pk=w), MaintenanceWindowNode.objects.filter(window_id=w)):
        rows.update(ends_at=at(s + 2))
    assert maintenance.retell(w) == [first.pk, second.pk]
    assert (told(first)["status"], told(first)["end"]) == ("True", at(s + 2).isoformat())
    assert [kind for kind, _ in events(first)] == ["reservation.maintenance_scheduled"]  # its start stands
    assert told(second)["reason"] == "WindowChanged"
    assert told(second)["message"] == (
        f"maintenance window {w} on node-a changed and no longer overlaps this booking: nothing moves for it"
    )
    assert [kind for kind, _ in events(second)] == [
        "reservation.maintenance_scheduled",
        "reservation.maintenance_cancelled",
    ]
    # Starting later: the booking is told its GPUs go at the new start.
    for rows in (MaintenanceWindow.objects.filter(pk=w), MaintenanceWindowNode.objects.filter(window_id=w)):
        rows.update(starts_at=at(s) + timedelta(minutes=30))
    assert maintenance.retell(w) == [first.pk]
    assert told(first)["at"] == (at(s) + timedelta(minutes=30)).isoformat()
    assert [kind for kind, _ in events(first)] == ["reservation.maintenance_scheduled"] * 2
