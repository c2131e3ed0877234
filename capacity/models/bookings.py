from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import DateTimeRangeField, RangeOperators
from django.contrib.postgres.indexes import GistIndex
from django.db import models
from django.db.models import F, Func, Q, Value

from inventory.models import Device, Node

from .reservations import AnyReservation, Reservation


class Allocation(models.Model):
    """What one placement took on one node: its window, scalar claims and (through bookings) atoms."""

    reservation = models.ForeignKey(
        Reservation, on_delete=models.PROTECT, null=True, blank=True, related_name="allocations"
    )
    instance_id = models.CharField(max_length=200, null=True, blank=True, db_index=True)
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="allocations")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    resources = models.JSONField(default=dict, blank=True, help_text="Scalar claims, e.g. {'vcpu': 16}.")
    released_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(reservation__isnull=False) & Q(instance_id__isnull=True))
                | (Q(reservation__isnull=True) & Q(instance_id__isnull=False)),
                name="allocation_exactly_one_owner",
                violation_error_message="An allocation belongs to exactly one of a reservation or an instance.",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")),
                name="allocation_window_nonempty",
                violation_error_message="An allocation's window must end after it starts.",
            ),
        ]

    def __str__(self) -> str:
        owner = (
            f"reservation {self.reservation_id}" if self.reservation_id else f"instance {self.instance_id}"
        )
        return f"allocation {self.pk} on {self.node_id} for {owner}"


OWNER_LAYER, LENT_LAYER = 0, 1


class DeviceBooking(models.Model):
    """One device held by one allocation over `[start, end)`, in a layer.

    Layer 0 is the owner's booking; layer 1 is spot work on an idle owner's lent GPUs
    (policy.lending). No two bookings of a device overlap in the same layer.
    """

    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="bookings")
    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="bookings")
    during = DateTimeRangeField()
    layer = models.SmallIntegerField(default=OWNER_LAYER, db_default=OWNER_LAYER)
    # What it holds and its GPU's model as they were when booked (capacity.gpu_hours): what counts
    # GPU-hours reads these, never the device now. An insert that leaves them out has them filled
    # by the table's trigger (migration 0041).
    gpu_model = models.CharField(
        max_length=200, help_text="The booked GPU's model when booked: its productName, else its class."
    )
    gpu_sevenths = models.SmallIntegerField(
        help_text="Sevenths of a GPU it holds: 7 whole, a MIG slice its slices, 0 a slice booked with its GPU."
    )

    class Meta:
        constraints = [
            # A one-point int8range stands in for btree_gist's `device_id WITH =` (and
            # `layer WITH =`), so the constraint needs no contrib extension (the embedded Postgres
            # ships none). The layer comes last: window reads probe the device range and window.
            ExclusionConstraint(
                name="devicebooking_no_overlap_per_layer",
                expressions=[
                    (
                        Func(F("device_id"), F("device_id"), Value("[]"), function="int8range"),
                        RangeOperators.OVERLAPS,
                    ),
                    ("during", RangeOperators.OVERLAPS),
                    (
                        Func(F("layer"), F("layer"), Value("[]"), function="int4range"),
                        RangeOperators.OVERLAPS,
                    ),
                ],
                violation_error_message="This device is already booked for part of that window.",
            ),
            models.CheckConstraint(
                condition=Q(layer__in=[OWNER_LAYER, LENT_LAYER]),
                name="devicebooking_layer_known",
                violation_error_message="A booking is the owner's (layer 0) or lent (layer 1).",
            ),
            models.CheckConstraint(
                condition=Q(during__isempty=False),
                name="devicebooking_during_nonempty",
                violation_error_message="A booking's window cannot be empty.",
            ),
        ]
        # A window's bookings are read by device range and window (placers.sql.key_in) from the
        # EXCLUDE constraint's GiST index; a one-column index on `during` read every pool's.
        indexes = [
            # The bookings not yet over (capacity_by_pool's "booked now" and "booked later"): after
            # a year, 50,000 of a million rows; probing each device's bookings read all of them.
            models.Index(Func(F("during"), function="upper"), name="devicebooking_ends_idx"),
            # The bookings starting in one hour: the usage report reads today's current hour's
            # (usage.booked_today); the rest of the day comes from the booked-points rollup.
            models.Index(Func(F("during"), function="lower"), name="devicebooking_starts_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.device_id} {self.during}"


class AnyAllocation(models.Model):
    """An allocation, live or moved to history (the view capacity_allocation_all): read only."""

    reservation = models.ForeignKey(
        AnyReservation, on_delete=models.DO_NOTHING, db_constraint=False, null=True, related_name="+"
    )
    instance_id = models.CharField(max_length=200, null=True)
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    resources = models.JSONField(default=dict)
    released_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "capacity_allocation_all"

    def __str__(self) -> str:
        return f"allocation {self.pk} on {self.node_id}"


class AnyDeviceBooking(models.Model):
    """A device booking, live or moved to history (the view capacity_devicebooking_all): read only.

    What users read about the past (a reservation's atoms, its usage, the usage report) reads
    this; the placers and the EXCLUDE constraint see only DeviceBooking, the live rows.
    """

    device = models.ForeignKey(Device, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    allocation = models.ForeignKey(
        AnyAllocation, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    during = DateTimeRangeField()
    layer = models.SmallIntegerField(default=OWNER_LAYER)
    gpu_model = models.CharField(max_length=200)
    gpu_sevenths = models.SmallIntegerField()

    class Meta:
        managed = False
        db_table = "capacity_devicebooking_all"

    def __str__(self) -> str:
        return f"{self.device_id} {self.during}"


class ScalarClaim(models.Model):
    """What one allocation claims of one scalar resource of its node over `[start, end)`.

    A node's room in a window is its capacity minus the most its claims hold at any instant of the
    window; the guarded commit decides under the pool lock.
    """

    # Looked up through scalarclaim_unique (allocation, resource): no index of its own to keep.
    allocation = models.ForeignKey(
        Allocation, on_delete=models.CASCADE, related_name="claims", db_index=False
    )
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="scalar_claims")
    resource = models.CharField(max_length=100)
    amount = models.BigIntegerField()
    during = DateTimeRangeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["allocation", "resource"],
                name="scalarclaim_unique",
                violation_error_message="The allocation already claims this resource.",
            ),
            models.CheckConstraint(
                condition=Q(amount__gt=0),
                name="scalarclaim_amount_positive",
                violation_error_message="A scalar claim must be positive.",
            ),
            models.CheckConstraint(
                condition=Q(during__isempty=False),
                name="scalarclaim_during_nonempty",
                violation_error_message="A claim's window cannot be empty.",
            ),
        ]
        indexes = [
            GistIndex(
                Func(F("node_id"), F("node_id"), Value("[]"), function="int8range"),
                F("during"),
                name="scalarclaim_node_during_idx",
            ),
            # No one-column index on `during`: with it, the commit's generic plan swept a node's
            # claims through it, reading every claim of the window (1.1 of the commit's 1.5 ms).
            # The claims long over, oldest first, as capacity/archive.py moves them to history.
            models.Index(Func(F("during"), function="upper"), name="scalarclaim_ends_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.node_id}:{self.resource}+{self.amount} {self.during}"
