"""A pool's booking version: what cached pages are keyed on."""

from django.db import models


class PoolBookingVersion(models.Model):
    """A number that changes when a transaction commits a change to a pool's bookings.

    Deferred triggers (migration 0036) set it from a sequence once per pool and transaction, at
    commit, on any insert or update of a device booking or scalar claim, the delete of one not yet
    ended, and any change of a node taint: the row is locked only while its transaction commits,
    so a booking in a pool waits at most for another's commit, not for its whole transaction.
    With the pool's inventory generation it keys the cached fragments of the pool page.
    """

    pool = models.OneToOneField(
        "inventory.Pool", on_delete=models.CASCADE, primary_key=True, related_name="booking_version"
    )
    version = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.pool_id}@{self.version}"


class PoolReservationVersion(models.Model):
    """A number that changes when a transaction commits a change to a pool's reservations.

    Deferred triggers (migration 0037) set it as the booking version is set, on any insert, update
    or delete of a reservation (its status, conditions, approval, release). With every pool's
    generation and booking version it keys the reservation lists' kept fragments.
    """

    pool = models.OneToOneField(
        "inventory.Pool", on_delete=models.CASCADE, primary_key=True, related_name="reservation_version"
    )
    version = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.pool_id}@{self.version}"
