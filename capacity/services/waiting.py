"""Waiting for the pool-lease placer: a create with `wait` holds its answer until its batch ran."""

from __future__ import annotations

import time

from django.db import connection

from capacity.models import Reservation
from capacity.models.reservations import QUEUED_CONDITION
from capacity.waits import HUB, SLOTS, stopping


def is_queued(reservation: Reservation) -> bool:
    """Return whether the pool-lease placer has yet to place the reservation."""
    return (
        reservation.status == Reservation.Status.PENDING
        and reservation.condition(QUEUED_CONDITION) is not None
    )


def await_placer(reservation: Reservation, timeout_ms: int) -> Reservation:
    """Return the reservation once its batch ran, or as it is when `timeout_ms` have passed.

        Waits on the placer's notifications through the process's one listener (capacity.waits),
        holding no database connection and no lock meanwhile; inside a transaction the row is not yet
        visible to the placer, so it answers at once, as it does past the tenant's bound on waits, past
    the process's share of waits (capacity.waits.SLOTS), and when the process stops.
    """
    if connection.in_atomic_block:
        return reservation
    deadline = time.monotonic() + timeout_ms / 1000
    with HUB.waiting(reservation.pk, reservation.tenant_id) as placed:
        while True:
            # Read after the waiter is registered, so a batch that ran meanwhile is not missed.
            current = Reservation.objects.get(pk=reservation.pk)
            remaining = deadline - time.monotonic()
            if placed is None or not is_queued(current) or remaining <= 0 or stopping():
                return current
            connection.close()  # hold no connection while waiting; the next read opens one
            SLOTS.wait(placed, remaining)
            placed.clear()
