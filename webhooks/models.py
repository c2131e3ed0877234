"""Webhook subscriptions, the event outbox, and each event's delivery to each subscription."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

RESERVATION_EVENTS = (
    "reservation.placed",
    "reservation.pending",
    "reservation.preempted",
    "reservation.repaired",
    "reservation.released",
    "reservation.starting",
    "reservation.ending",
    "reservation.idle",
    "reservation.awaiting_approval",
    "reservation.approved",
    "reservation.denied",
    "reservation.maintenance_scheduled",
    "reservation.maintenance_cancelled",
)
NODE_EVENTS = (
    "node.cordoned",
    "node.drained",
    "node.unhealthy",
    "node.stale",
    "node.unbooked_use",
    "node.maintenance_scheduled",
)
EVENT_TYPES = (*RESERVATION_EVENTS, "webhook.test", *NODE_EVENTS)


class Subscription(models.Model):
    """A URL that receives its owner's events, each signed with the subscription's secret."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    # Why it was disabled (it failed for WEBHOOK_DISABLE_AFTER); shown to its owner.
    disabled_reason = models.TextField(blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["owner"], name="webhooks_subscription_owner")]

    def __str__(self) -> str:
        return f"{self.owner} → {self.url}"


class Event(models.Model):
    """One change worth telling: written by triggers in the transaction that made the change.

    A rolled-back change leaves none. The worker fans each out to the subscriptions that want it
    (`fanned_out`), writing the body it sends then: the object as the API shows it to the owner.
    """

    type = models.CharField(max_length=40)
    at = models.DateTimeField()
    reservation_id = models.BigIntegerField(null=True, blank=True)
    tenant_id = models.BigIntegerField(null=True, blank=True)
    node_id = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True)
    fanned_out = models.BooleanField(default=False)
    # The writing transaction, so that one change to several devices of a node is one event.
    xact = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["id"], name="webhooks_event_unfanned", condition=Q(fanned_out=False)),
            models.Index(fields=["reservation_id", "type"], name="webhooks_event_reservation"),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk}"


class Delivery(models.Model):
    """An event on its way to one subscription: sent until answered 2xx, or given up on."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="deliveries")
    # Deliveries of one key go one at a time, in event order: "reservation:42", "node:7".
    order_key = models.CharField(max_length=60)
    body = models.TextField()  # fixed at fan-out: every retry signs and sends the same bytes
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["next_attempt_at"], name="webhooks_delivery_due", condition=Q(status="pending")
            ),
            models.Index(
                fields=["subscription", "order_key", "event"],
                name="webhooks_delivery_order",
                condition=Q(status="pending"),
            ),
            models.Index(fields=["subscription", "-id"], name="webhooks_delivery_recent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "subscription"],
                name="webhooks_delivery_once",
                violation_error_message="This event is already on its way to this subscription.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.subscription_id} ({self.status})"


class Attempt(models.Model):
    """One try of a delivery: when, how long, the answer's status and its first 200 printable characters."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.IntegerField(null=True, blank=True)
    answer = models.TextField(blank=True)  # at most ANSWER_KEPT (200) printable characters
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["delivery", "-id"], name="webhooks_attempt_recent")]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.at:%H:%M:%S}: {self.status_code or self.error}"


class CalendarFeed(models.Model):
    """A user's secret calendar URL (/calendar/<token>.ics): whoever holds it reads their bookings."""

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar")
    token = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"calendar of {self.owner}"
