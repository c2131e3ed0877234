from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from inventory.changelog import ChangeHistory, RemembersLoaded, describe_label, describe_node, describe_taint
from inventory.validators import validate_label_key, validate_taint_key

from .tenancy import Pool, Tenant


class Node(RemembersLoaded, models.Model):
    """A machine in a pool; its state decides whether the placer may use it."""

    class Role(models.TextChoices):
        HOST = "host"
        CONTROLLER = "controller"
        GATEWAY = "gateway"

    class ProvisionState(models.TextChoices):
        PROVISIONING = "provisioning"
        ACTIVE = "active"
        RETIRING = "retiring"
        FAILED = "failed"

    class Connectivity(models.TextChoices):
        CONNECTED = "connected"
        DISCONNECTED = "disconnected"
        UNKNOWN = "unknown"

    class Trust(models.TextChoices):
        OPERATOR = "operator"
        TENANT_CONTROLLED = "tenant-controlled"

    name = models.CharField(max_length=200, unique=True)
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="nodes")
    role = models.CharField(max_length=20, choices=Role, default=Role.HOST)
    provision_state = models.CharField(max_length=20, choices=ProvisionState, default=ProvisionState.ACTIVE)
    connectivity = models.CharField(max_length=20, choices=Connectivity, default=Connectivity.CONNECTED)
    trust = models.CharField(max_length=20, choices=Trust, default=Trust.OPERATOR)
    maintenance = models.BooleanField(default=False)
    cordoned = models.BooleanField(default=False)
    owner_tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="owned_nodes"
    )
    converged = models.BooleanField(default=True, help_text="Has applied its first converged spec.")
    # Set by a drain (cordoned, bookings that have not started moved off); cleared by uncordon.
    drain_started_at = models.DateTimeField(null=True, blank=True)
    drain_reason = models.CharField(max_length=200, blank=True)
    # Kept by a trigger on taints and conditions, in the same transaction as their change.
    no_schedule_reasons = ArrayField(models.TextField(), default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Who cordoned, drained or edited the node, when and why (the trigger-kept reasons are derived).
    history = ChangeHistory(describe_node, excluded_fields=["no_schedule_reasons", "updated_at"])

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["pool", "name"], name="node_pool_name_idx")]

    def __str__(self) -> str:
        return self.name


class NodeReport(models.Model):
    """When a node last reported, and by whom (an operator, or the node's own credential).

    A row of its own, not columns of Node: an agent reports every 30 s, and every update of a node
    row bumps its pool's generation (the placer's index is rebuilt on it). Only a node whose own
    credential has reported (`agent_at`) can go stale when its agent stops.
    """

    node = models.OneToOneField(Node, on_delete=models.CASCADE, primary_key=True, related_name="report")
    at = models.DateTimeField()
    by = models.CharField(max_length=150, blank=True)
    agent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.node_id} reported at {self.at:%Y-%m-%d %H:%M} by {self.by or 'unknown'}"


class NodeRefusal(models.Model):
    """The node's last refused report: when, the error's code and message, and who sent it.

    Written in a transaction of its own after the refused one rolled back; a refusal never touches
    NodeReport (the last report that was applied).
    """

    node = models.OneToOneField(Node, on_delete=models.CASCADE, primary_key=True, related_name="refusal")
    at = models.DateTimeField()
    code = models.CharField(max_length=40)
    message = models.TextField()
    by = models.CharField(max_length=150, blank=True)

    def __str__(self) -> str:
        return f"{self.node_id} refused at {self.at:%Y-%m-%d %H:%M}: {self.code}"


class NodeLabel(RemembersLoaded, models.Model):
    """A key/value on a node; `bc.dev/` keys count only when written by inventory (source system)."""

    class Source(models.TextChoices):
        SYSTEM = "system"
        OPERATOR = "operator"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="labels")
    key = models.CharField(max_length=253, validators=[validate_label_key])
    value = models.CharField(max_length=253, blank=True)
    source = models.CharField(max_length=10, choices=Source, default=Source.OPERATOR)
    history = ChangeHistory(describe_label)

    class Meta:
        ordering = ["node", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "key"],
                name="nodelabel_unique_key",
                violation_error_message="The node already has a label with this key.",
            ),
            models.CheckConstraint(
                condition=Q(key__regex=r"^[A-Za-z][A-Za-z0-9._/-]*$"),
                name="nodelabel_key_syntax",
                violation_error_message="Label keys start with a letter and contain only letters, digits, '.', '_', '/' and '-'.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class NodeTaint(RemembersLoaded, models.Model):
    """A taint; NoSchedule and NoExecute taints add `<key>=<value>` to the node's no_schedule_reasons."""

    class Effect(models.TextChoices):
        NO_SCHEDULE = "NoSchedule"
        PREFER_NO_SCHEDULE = "PreferNoSchedule"
        NO_EXECUTE = "NoExecute"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="taints")
    key = models.CharField(max_length=253, validators=[validate_taint_key])
    value = models.CharField(max_length=253, blank=True)
    effect = models.CharField(max_length=20, choices=Effect, default=Effect.NO_SCHEDULE)
    history = ChangeHistory(describe_taint)

    class Meta:
        ordering = ["node", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "key"],
                name="nodetaint_unique_key",
                violation_error_message="The node already has a taint with this key.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class NodeCondition(models.Model):
    """An observed condition; `Ready` not True, or any other condition True, blocks scheduling."""

    class Status(models.TextChoices):
        TRUE = "True"
        FALSE = "False"
        UNKNOWN = "Unknown"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="conditions")
    type = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status, default=Status.TRUE)
    reason = models.CharField(max_length=200, blank=True)
    message = models.TextField(blank=True)
    last_transition_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["node", "type"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "type"],
                name="nodecondition_unique_type",
                violation_error_message="The node already has a condition of this type.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type}={self.status}"


class NodeResource(models.Model):
    """A scalar resource of a node; capacity is floor(allocatable × ratio).

    Claims live with the bookings (capacity's ScalarClaim): room in a window is the capacity minus
    the most claimed at any instant of it.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="resources")
    resource = models.CharField(max_length=100)
    allocatable = models.FloatField()
    ratio = models.FloatField(default=1.0, help_text="Overcommit ratio.")

    class Meta:
        ordering = ["node", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "resource"],
                name="noderesource_unique",
                violation_error_message="The node already has this resource.",
            ),
            models.CheckConstraint(
                condition=Q(allocatable__gte=0, ratio__gt=0),
                name="noderesource_sizes_positive",
                violation_error_message="Allocatable must be non-negative and the ratio positive.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node}:{self.resource}"


class NodeImageCache(models.Model):
    """An image a node's runtime holds; `ready` rows feed the image-cached scorer."""

    class State(models.TextChoices):
        PULLING = "pulling"
        READY = "ready"
        FAILED = "failed"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="image_cache")
    image = models.CharField(max_length=300)
    state = models.CharField(max_length=10, choices=State, default=State.READY)

    class Meta:
        ordering = ["node", "image"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "image"],
                name="nodeimagecache_unique",
                violation_error_message="The node already lists this image.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node}:{self.image}"
