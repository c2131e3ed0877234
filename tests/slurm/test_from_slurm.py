"""Slurm's view comes back: DOWN and DRAIN nodes stop being offered; a hand-made reservation is blocked time."""

from __future__ import annotations

from datetime import timedelta

from slurm_helpers import now, slurm

from capacity.port import MaintenanceWindow
from inventory.models import Node, NodeCondition
from slurm.models import ImportedReservation
from slurm.reconcile import run_pass
from slurm.scontrol import slurm_time


def test_a_node_slurm_drains_gets_a_condition_and_is_not_offered_until_it_comes_back(lab, book):
    slurm("scontrol", "update", "NodeName=berth-n1", "State=DRAIN", "Reason=bad fan")
    assert run_pass().conditions == 1
    condition = NodeCondition.objects.get(node__name="berth-n1", type="SlurmNode")
    assert condition.reason == "Drain"
    assert condition.message.startswith(
        "Slurm reports the node DRAIN: bad fan [root@"
    )  # who and when, as Slurm says
    assert "SlurmNode" in Node.objects.get(name="berth-n1").no_schedule_reasons
    assert book(gang={"size": 2}).reservation.status == "pending"
    assert book().reservation.allocations.get().node.name == "berth-n2"
    slurm("scontrol", "update", "NodeName=berth-n1", "State=RESUME")
    assert run_pass().conditions == 1
    assert not NodeCondition.objects.filter(type="SlurmNode").exists()
    assert Node.objects.get(name="berth-n1").no_schedule_reasons == []


def test_a_reservation_made_by_hand_in_slurm_is_blocked_time_with_its_name(lab, book):
    start = now().replace(microsecond=0) + timedelta(hours=1)
    slurm("scontrol", "create", "reservation", "ReservationName=bios-update", "Nodes=berth-n1", "Users=root",
          f"StartTime={slurm_time(start)}", "Duration=60")  # fmt: skip
    assert run_pass().imported == ["bios-update"]
    imported = ImportedReservation.objects.get()
    window = MaintenanceWindow.objects.get(pk=imported.window_id)
    assert window.reason == "Slurm reservation bios-update"
    assert (window.starts_at, window.ends_at) == (start, start + timedelta(hours=1))
    # No booking is placed over it: a lease in its hour goes to the other node, a gang waits.
    during = book(start=timedelta(hours=1, minutes=10), length=timedelta(minutes=10))
    assert during.reservation.allocations.get().node.name == "berth-n2"
    assert book(start=timedelta(hours=1), gang={"size": 2}).reservation.status == "pending"
    assert run_pass().imported == []  # nothing changed in Slurm: nothing to do again
    slurm("scontrol", "delete", "ReservationName=bios-update")
    run_pass()
    assert (
        not ImportedReservation.objects.exists()
        and not MaintenanceWindow.objects.filter(pk=window.pk).exists()
    )


def test_a_hand_made_reservation_over_a_berth_booking_is_reported(lab, book):
    booked = book(start=timedelta(hours=2), gang={"size": 2})
    start = now().replace(microsecond=0) + timedelta(hours=2)
    slurm("scontrol", "create", "reservation", "ReservationName=admin-hold", "Nodes=berth-n2", "Users=root",
          f"StartTime={slurm_time(start)}", "Duration=30", "Flags=OVERLAP")  # fmt: skip
    outcome = run_pass()
    assert (
        booked.reservation.pool_id,
        f"Slurm reservation admin-hold overlaps Berth bookings: reservation {booked.reservation.pk}",
    ) in outcome.problems
