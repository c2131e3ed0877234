"""A pool's booking version: what cached pages are keyed on."""

from django.db import models


class PoolBookingVersion(models.Model):
    """A number that changes when a transaction commits a change to a pool's bookings.

    Deferred triggers (migration 0036) set it from a sequence once per pool and transaction, at
    commit, on any insert or update of a device booking or scalar claim, the delete of one not yet
    ended, and any change of a node taint: the row is locked only while its transaction commits,
    so a booking in a pool waits at most for another's commit, not for its whole transaction.
    With the pool's inventory generation it keys the cached fragments of the pool and node pages;
    with `reservations` too, the reservation lists'.
    """

    pool = models.OneToOneField(
        "inventory.Pool", on_delete=models.CASCADE, primary_key=True, related_name="booking_version"
    )
    version = models.BigIntegerField()
    # Set as `version` is, on any change of a reservation of the pool (migration 0040): the
    # reservation lists' key. A column of the same row, so that a transaction bumping both
    # locks one row per pool; two rows taken in either order deadlocked concurrent bookings.
    reservations = models.BigIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.pool_id}@{self.version}"
