from collections.abc import Sequence

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from inventory.models import Pool, Tenant

QUEUED_CONDITION = "Queued"
QUEUED_MESSAGE = "queued for the pool's placer"
UNSCHEDULABLE = "Unschedulable"
NO_FIT = "NoFit"
# A spot reservation regular work took back: status preempted, with this condition saying by whom and when.
PREEMPTED_CONDITION = "Preempted"
# A running reservation whose GPUs did almost nothing for hours (the usage app marks it; pages show it).
IDLE = "Idle"
# An owner that took its lent GPUs back (or whose processes showed up on them): not marked Idle again
# on samples from before then (usage/idle.py), so that its GPUs are not lent again at once.
RECLAIMED = "Reclaimed"
# Held for an operator above the pool's approvalAboveGpuHours (policy.approval), then approved.
AWAITING = "AwaitingApproval"
APPROVED = "Approved"
# What a booking borrowed past its tenant's guarantee in a pool with shares (policy.borrowing).
BORROWED = "Borrowed"
# Under notice (policy.notice; capacity.placers.take_back gives it): when its GPUs are taken back.
PREEMPT_AT = "PreemptAt"
# A maintenance window will take GPUs this booking holds (the maintenance app, maintenance/notice.py):
# status True names the window; False says a window that would have was cancelled.
MAINTENANCE_SCHEDULED = "MaintenanceScheduled"
# A reservation the pool-lease placer has yet to place: pending, with a Queued condition.
QUEUED = Q(status="pending", conditions__contains=[{"type": QUEUED_CONDITION}])


def preempt_at(conditions: Sequence[dict]) -> str | None:
    """Return the time a reservation under notice is taken back (its PreemptAt condition), else None."""
    found = next((c for c in conditions if c.get("type") == PREEMPT_AT), None)
    return found.get("at") if found else None


def queued() -> dict:
    """Return the Queued condition of a reservation waiting for the pool-lease placer."""
    return {"type": QUEUED_CONDITION, "status": "True", "reason": "PoolLease", "message": QUEUED_MESSAGE}


def unschedulable(reason: str, kind: str = NO_FIT, rest: list[tuple[int, str]] | None = None) -> dict:
    """Return the Unschedulable condition of a pending reason, as both placers write it.

    `more` keeps the rejection groups past the summary's five, for the pages (the API shows the
    spec's fields only), so what a page lists adds up to the pool's nodes.
    """
    condition = {"type": UNSCHEDULABLE, "status": "True", "reason": kind, "message": reason}
    if rest:
        condition["more"] = [[count, label] for count, label in rest]
    return condition


class Conditions:
    """What a reservation, live or moved to history, says of its conditions."""

    conditions: list

    def condition(self, type_: str) -> dict | None:
        """Return the condition of this type, if any."""
        return next((c for c in self.conditions if c.get("type") == type_), None)


class Reservation(Conditions, models.Model):
    """A tenant's request for capacity in a pool and its lifecycle (pending, placed, released).

    The pool-lease placer's queue is the pending rows with a Queued condition; `Status.QUEUED` is
    not used. A spot reservation that regular work took back ends `preempted`, its released_at the
    preemption time and a Preempted condition naming the reservation that took it.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        QUEUED = "queued"
        PLACED = "placed"
        RELEASED = "released"
        PREEMPTED = "preempted"

    class Priority(models.TextChoices):
        REGULAR = "regular"
        SPOT = "spot"

    class Binding(models.TextChoices):
        NONE = "none"
        NODE = "node"
        KUBERNETES = "kubernetes"

    # Looked up through reservation_tenant_status_idx and reservation_pool_status_idx, which lead
    # with them: every index is written again when a reservation changes status.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="reservations", db_index=False)
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="reservations", db_index=False)
    request = models.JSONField(help_text="The validated placement request.")
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    # [{"type": "Unschedulable", "status": "True", "reason": "NoFit", "message": "…"}]
    conditions = models.JSONField(default=list, blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    priority = models.CharField(max_length=10, choices=Priority, default=Priority.REGULAR)
    binding = models.CharField(max_length=12, choices=Binding, default=Binding.NONE)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    released_at = models.DateTimeField(null=True, blank=True)
    # Whole GPUs held past the tenant's guarantee in a pool with shares (policy.borrowing):
    # what a guaranteed booking may reclaim. 0 for everything else.
    borrowed_gpus = models.FloatField(default=0.0, db_default=0.0)
    # The owner asked that it never be released for idleness (where its pool's policy allows it);
    # it is still marked Idle. Not kept in history: it matters only while the booking runs.
    keep_when_idle = models.BooleanField(default=False, db_default=False)
    # Spot work placed on an idle owner's lent GPUs (policy.lending): the owners'
    # reservations. Empty for everything else. Not kept in history.
    lent_from = ArrayField(models.BigIntegerField(), default=list, db_default=[], blank=True)
    # The series this reservation is an occurrence of (capacity.models.series), else null. Not
    # kept in history: a series' page lists the occurrences still live.
    series = models.ForeignKey(
        "capacity.Series",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="occurrences",
        db_index=False,
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "status"], name="reservation_tenant_status_idx"),
            models.Index(fields=["pool", "status"], name="reservation_pool_status_idx"),
            # The pool-lease placer's queue: each pool's queued reservations, oldest first.
            models.Index(
                fields=["pool", "created_at", "id"], condition=QUEUED, name="reservation_queued_idx"
            ),
            # The lists, newest first (everyone's, and a tenant's): a year of history made each page
            # sort every row (0.31 s for a million, bench_scale) where these read fifty.
            models.Index(fields=["-created_at", "-id"], name="reservation_newest_idx"),
            models.Index(fields=["tenant", "-created_at", "-id"], name="reservation_tenant_newest_idx"),
            # A series' occurrences, in start order; only occurrences have a series.
            models.Index(
                fields=["series", "starts_at"],
                condition=Q(series__isnull=False),
                name="reservation_series_idx",
            ),
            # Bookings awaiting an operator's approval (policy.approvals): the worker's
            # hold check each round and the approval queue read these few, not every placed row.
            models.Index(
                fields=["id"],
                condition=Q(status="placed", conditions__contains=[{"type": "AwaitingApproval"}]),
                name="reservation_awaiting_idx",
            ),
            # Spot work running on lent GPUs (policy.reclaim): an owner's reservation page
            # and every reclaim look for the work lent from it; scanned, a year of rows took 164 ms.
            models.Index(
                fields=["id"],
                condition=Q(status="placed", priority="spot") & ~Q(lent_from=[]),
                name="reservation_lent_work_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(borrowed_gpus__gte=0),
                name="reservation_borrowed_nonnegative",
                violation_error_message="A reservation cannot borrow fewer than 0 GPUs.",
            ),
            models.UniqueConstraint(
                fields=["tenant", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="reservation_idempotency_key_unique",
                violation_error_message="This tenant already used this idempotency key.",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")),
                name="reservation_window_nonempty",
                violation_error_message="A reservation's window must end after it starts.",
            ),
        ]

    def __str__(self) -> str:
        return f"reservation {self.pk} ({self.status})"


class AnyReservation(Conditions, models.Model):
    """A reservation, live or moved to history (the view capacity_reservation_all): read only.

    A released or preempted reservation over more than HISTORY_AFTER ago, with nothing of it
    left live, moves to capacity_reservationhistory (capacity/archive.py); its id, events and
    fields stay as they were. Lists, pages and reports read this; actions the live Reservation.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    pool = models.ForeignKey(Pool, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    request = models.JSONField()
    status = models.CharField(max_length=10, choices=Reservation.Status)
    conditions = models.JSONField(default=list)
    idempotency_key = models.CharField(max_length=200, null=True)
    priority = models.CharField(max_length=10, choices=Reservation.Priority)
    binding = models.CharField(max_length=12, choices=Reservation.Binding)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True)

    Status, Priority, Binding = Reservation.Status, Reservation.Priority, Reservation.Binding

    class Meta:
        managed = False
        db_table = "capacity_reservation_all"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"reservation {self.pk} ({self.status})"


class ReservationEvent(models.Model):
    """A reservation's status and conditions as they stood from `at`: its condition history.

    Written by a database trigger whenever a reservation row is inserted or its status or
    conditions change, whichever path wrote it (the ORM, the placers' statements, repair), so the
    history cannot miss a change. `at` is the row's own updated_at, the writer's clock.
    """

    # Looked up through reservation_event_at_idx (reservation, at).
    # No database constraint: a reservation moved to history keeps its events here.
    reservation = models.ForeignKey(
        Reservation, on_delete=models.CASCADE, related_name="events", db_index=False, db_constraint=False
    )
    at = models.DateTimeField()
    status = models.CharField(max_length=10)
    conditions = models.JSONField(default=list)
    # Who made the change and in which request, as the writer named them (trail.context.stamp);
    # null where none did: the worker, or a path that does not say.
    actor = models.CharField(max_length=150, null=True, blank=True)
    request_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["reservation", "at"], name="reservation_event_at_idx"),
            # The audit export (auditlog/) pages every reservation's events newest first.
            models.Index(fields=["-at", "-id"], name="reservation_event_audit_idx"),
            # Its actor filter: only events a writer named (the worker's, null, are most of the rest).
            models.Index(
                fields=["actor", "-at"], name="reservation_event_actor_idx", condition=Q(actor__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return f"reservation {self.reservation_id} {self.status} at {self.at:%Y-%m-%d %H:%M:%S}"
