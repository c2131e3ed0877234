"""Bookings long over move to the history tables and are still found wherever a user looks.

two_hosts: node-a and node-b in lab-pool, 4 GPUs each. acme booked 2 GPUs of node-a for a day
sixty days ago (booked back then):

    day     -60 ........ -59          ...           today
    node-a  [2 GPUs acme]                            (free)
"""

import dataclasses
import re
from datetime import UTC, datetime, timedelta

from django.db import connection

from capacity import services
from capacity.access import Scope
from capacity.archive import Moved, history_sizes, move_history
from capacity.conf import placer_config
from capacity.models import Allocation, DeviceBooking, Reservation, ScalarClaim
from inventory.models import Node, NodeLabel
from usage.report import usage_report

moved_nothing = Moved(0, 0)


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def book(gpus: int, start: datetime, hours: int, now: datetime, **extra):
    data = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": ms(start), "end": ms(start + timedelta(hours=hours))},
        **extra,
    }
    config = dataclasses.replace(placer_config(), random=None)
    return services.reserve(data, now=now, config=config).reservation


def booked_hours(day: datetime) -> float:
    first, last = (day - timedelta(days=1)).date(), (day + timedelta(days=1)).date()
    rows = usage_report(first, last, ["tenant"], "day", Scope())
    return round(sum(r.booked for r in rows), 3)


def test_a_booking_moved_to_history_is_found_everywhere_a_user_looks(op, alice, two_hosts):
    now = datetime.now(UTC)
    then = (now - timedelta(days=60)).replace(hour=9, minute=0, second=0, microsecond=0)
    old = book(2, then, 24, now=then)
    assert old.status == "placed"
    services.expire_ended()
    detail = op.get(f"/api/v1/reservations/{old.pk}").json()
    page = alice.get(f"/reservations/{old.pk}/").text
    atoms = detail["allocations"][0]["atoms"]
    assert len(atoms) == 2 and all(atom in page for atom in atoms)
    timeline = op.get(f"/nodes/node-a/?from={then:%Y-%m-%d}").text
    bars = re.findall(rf"#{old.pk} acme", timeline)
    hours = booked_hours(then)
    assert hours == 48.0

    moved = move_history(now)

    assert moved == Moved(bookings=2, claims=0, allocations=1, reservations=1)
    assert not DeviceBooking.objects.filter(allocation__reservation=old).exists()
    assert not Allocation.objects.filter(reservation=old).exists()
    assert not Reservation.objects.filter(pk=old.pk).exists()
    sizes = history_sizes()
    assert (sizes["capacity_devicebooking"], sizes["capacity_devicebookinghistory"]) == (0, 2)
    assert (sizes["capacity_allocation"], sizes["capacity_allocationhistory"]) == (0, 1)
    assert (sizes["capacity_reservation"], sizes["capacity_reservationhistory"]) == (0, 1)
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM capacity_devicebookinghistory_{then:%Y_%m}")
        assert cur.fetchone()[0] == 2  # in the partition of the month it ended
    # The API, the reservation page, the node's timeline back then and the usage report read it.
    assert op.get(f"/api/v1/reservations/{old.pk}").json() == detail
    # Its history of conditions stays, and releasing it again changes nothing.
    assert "placed" in alice.get(f"/reservations/{old.pk}/").text
    assert op.post(f"/api/v1/reservations/{old.pk}/release").json() == detail
    assert old.pk in [r["id"] for r in alice.get("/api/v1/reservations?status=released").json()["results"]]
    assert all(atom in alice.get(f"/reservations/{old.pk}/").text for atom in atoms)
    assert old.pk in [r["id"] for r in alice.get("/api/v1/reservations").json()["results"]]
    assert [r["id"] for r in alice.get("/api/v1/reservations?node=node-a").json()["results"]] == [old.pk]
    assert re.findall(rf"#{old.pk} acme", op.get(f"/nodes/node-a/?from={then:%Y-%m-%d}").text) == bars
    assert bars and booked_hours(then) == hours
    # A second round has nothing left to move; placing now on the same GPUs is untouched.
    assert move_history(now) == moved_nothing
    fresh = book(4, now + timedelta(hours=1), 2, now=now)
    assert fresh.status == "placed"
    # (The autouse audit, check_capacity, runs after this test and must find no drift.)


def test_only_rows_that_ended_history_after_ago_move_and_claims_move_too(three_hosts_with_scalars, settings):
    for node in Node.objects.all():  # scalar claims need a node that enforces limits
        NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    now = datetime.now(UTC)
    recent = now - settings.HISTORY_AFTER + timedelta(hours=1)  # ended an hour short of HISTORY_AFTER
    old = now - settings.HISTORY_AFTER - timedelta(days=3)
    kept = book(1, recent - timedelta(hours=1), 1, now=recent - timedelta(hours=1), resources={"vcpu": 8})
    gone = book(1, old, 1, now=old, resources={"vcpu": 8})
    unreleased = book(1, old, 1, now=old)
    assert move_history(now) == moved_nothing  # not yet released: release and the audit read its rows
    services.release(gone.pk, now=now)
    services.release(kept.pk, now=now)
    assert (kept.status, gone.status) == ("placed", "placed"), (kept.conditions, gone.conditions)
    moved = move_history(now, batch=1)  # one row a transaction: batches add up
    assert moved == Moved(bookings=1, claims=1, allocations=1, reservations=1)
    assert sorted(DeviceBooking.objects.values_list("allocation__reservation", flat=True)) == [
        kept.pk,
        unreleased.pk,
    ]
    assert list(ScalarClaim.objects.values_list("allocation__reservation", flat=True)) == [kept.pk]
    services.release(unreleased.pk, now=now)
