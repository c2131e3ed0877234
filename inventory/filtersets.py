"""Node filters shared by the pool page and the API: state, label and free GPUs now."""

from __future__ import annotations

from collections.abc import Mapping

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from .models import Device, Node, NodeLabel, NodeTaint

STATES = (
    "schedulable",
    "cordoned",
    "maintenance",
    "tainted",
    "dedicated",
    "unreachable",
    "provisioning",
    "unhealthy",
)


class FilterError(ValueError):
    """A filter value that cannot be used; `field` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _state_q(state: str) -> Q:
    if state == "cordoned":
        return Q(cordoned=True)
    if state == "maintenance":
        return Q(maintenance=True)
    if state == "unreachable":
        return ~Q(connectivity=Node.Connectivity.CONNECTED)
    if state == "provisioning":
        return ~Q(provision_state=Node.ProvisionState.ACTIVE) | Q(converged=False)
    if state == "tainted":
        return Q(Exists(NodeTaint.objects.filter(node=OuterRef("pk"))))
    if state == "dedicated":
        return Q(Exists(NodeTaint.objects.filter(node=OuterRef("pk"), key="dedicated")))
    if state == "unhealthy":
        return ~Q(no_schedule_reasons=[])
    # schedulable: nothing in the eligibility table stops it (for some tenant); a test keeps this
    # in step with the placer's may_be_schedulable().
    return (
        Q(
            role=Node.Role.HOST,
            cordoned=False,
            maintenance=False,
            connectivity=Node.Connectivity.CONNECTED,
            provision_state=Node.ProvisionState.ACTIVE,
            converged=True,
        )
        & ~Q(trust=Node.Trust.TENANT_CONTROLLED)
        & (Q(owner_tenant__isnull=True) | Q(owner_tenant=F("pool__owner_tenant")))
    ) & (
        Q(no_schedule_reasons=[])
        | Q(no_schedule_reasons__len=1, no_schedule_reasons__0__startswith="dedicated=")
    )


def free_gpus_now(queryset: QuerySet[Node], device_class: str = "gpu") -> QuerySet[Node]:
    """Annotate `free_now`: healthy, bookable atoms of the class with no booking covering now.

    A GPU split into MIG slices is not a whole-GPU atom, so it never counts as a free GPU.
    """
    from django.apps import apps

    booking = apps.get_model("capacity", "DeviceBooking")
    now = timezone.now()
    busy = booking.objects.filter(device=OuterRef("devices__pk"), during__contains=now)
    split = Device.objects.filter(parent=OuterRef("devices__pk"))
    parent_busy = booking.objects.filter(device=OuterRef("devices__parent"), during__contains=now)
    return queryset.annotate(
        free_now=Count(
            "devices",
            filter=Q(devices__device_class=device_class, devices__healthy=True, devices__bookable=True)
            & ~Q(Exists(busy))
            & ~Q(Exists(split))
            & ~Q(Exists(parent_busy)),
            distinct=True,
        )
    )


def filter_nodes(queryset: QuerySet[Node], params: Mapping[str, str]) -> QuerySet[Node]:
    """Apply `state`, `label` (key or key=value), `free_gpus` (at least n free now) and `q` (name)."""
    state = (params.get("state") or "").strip()
    if state:
        if state not in STATES:
            raise FilterError("state", f"state must be one of {', '.join(STATES)}")
        queryset = queryset.filter(_state_q(state))
    label = (params.get("label") or "").strip()
    if label:
        key, _, value = label.partition("=")
        labels = NodeLabel.objects.filter(node=OuterRef("pk"), key=key.strip())
        if value.strip() and value.strip() != "*":
            labels = labels.filter(value=value.strip())
        queryset = queryset.filter(Exists(labels))
    name = (params.get("q") or "").strip()
    if name:
        queryset = queryset.filter(name__icontains=name)
    free = (params.get("free_gpus") or "").strip()
    if free:
        # isascii(): isdigit() also accepts '²' and other scripts' digits, which int() refuses.
        if not (free.isascii() and free.isdigit()) or len(free) > 6:
            raise FilterError("free_gpus", "free_gpus must be a whole number")
        queryset = free_gpus_now(queryset).filter(free_now__gte=int(free))
    return queryset
