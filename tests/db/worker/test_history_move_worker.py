"""The worker moves bookings, allocations and reservations long over to history; a held row or a second mover is skipped, not waited on.

node-a: [GPU0]    acme booked GPU0 for a day 40 days ago (released when its window ended)
"""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from capacity import worker
from capacity.archive import _LOCK, Moved, history_sizes, move_history
from capacity.conf import placer_config
from capacity.models import AnyReservation, DeviceBooking

from booking import reserve


def booked_long_ago():
    """Book GPU0 for a day 40 days ago, as of then; return the reservation."""
    then = timezone.now() - timedelta(days=40)
    start = int(then.timestamp() * 1000)
    data = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "during": {"start": start, "end": start + 24 * 3_600_000},
    }
    return reserve(data, now=then).reservation


def test_a_worker_round_releases_and_then_moves_a_booking_long_over(tenant, make_node, monkeypatch):
    make_node("node-a", gpus=1)
    old = booked_long_ago()
    assert old.status == "placed" and DeviceBooking.objects.count() == 1
    monkeypatch.setattr(worker, "_history_moved", [float("-inf")])  # housekeeping due now
    worker.run_round(placer_config())
    assert AnyReservation.objects.get(pk=old.pk).status == "released"
    sizes = history_sizes()
    assert (sizes["capacity_devicebooking"], sizes["capacity_devicebookinghistory"]) == (0, 1)
    assert (sizes["capacity_reservation"], sizes["capacity_reservationhistory"]) == (0, 1)


@pytest.mark.django_db(transaction=True)
def test_a_row_another_transaction_holds_and_a_second_mover_are_skipped_without_waiting(tenant, make_node):
    make_node("node-a", gpus=1)
    old = booked_long_ago()
    from capacity import services

    services.release(old.pk)
    held, done = threading.Event(), threading.Event()
    lock_sql = {
        "row": "SELECT 1 FROM capacity_devicebooking FOR UPDATE",
        "mover": f"SELECT pg_advisory_lock({_LOCK})",
    }

    def hold(kind):
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute(lock_sql[kind])
                held.set()
                done.wait(10)
                if kind == "mover":
                    cur.execute(f"SELECT pg_advisory_unlock({_LOCK})")
        finally:
            connection.close()

    for kind in ("row", "mover"):
        held.clear(), done.clear()
        holder = threading.Thread(target=hold, args=(kind,))
        holder.start()
        assert held.wait(10)
        started = timezone.now()
        assert move_history(timezone.now()) == Moved(0, 0), kind
        assert timezone.now() - started < timedelta(seconds=2), kind  # skipped, not waited on
        done.set()
        holder.join(10)
    assert move_history(timezone.now()) == Moved(1, 0, 1, 1)
    assert not DeviceBooking.objects.exists()
