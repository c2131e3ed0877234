"""Node filters, declared once with django-filter and shared by the pool page and the nodes API.

NetBox's pattern: one FilterSet whose form the page renders (errors next to their fields) and whose
errors the API answers as INVALID_INPUT. The states are the vocabulary of inventory.states.
"""

from __future__ import annotations

from collections.abc import Mapping

import django_filters
import django_filters.fields
from django import forms
from django.core.validators import RegexValidator
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from .errors import FilterError
from .models import Device, Node, NodeLabel
from .states import NAMES, state_q
from .viewer import Viewer

STATE_CHOICES = NAMES


def free_gpus_now(queryset: QuerySet[Node], viewer: Viewer, device_class: str = "gpu") -> QuerySet[Node]:
    """Annotate `free_now`: the GPUs of the class the viewer could book now.

    Healthy, bookable atoms with no booking covering now, on nodes schedulable to the viewer
    (inventory.states): a cordoned, NotReady or unreachable node has none. A GPU split into MIG
    slices is not a whole-GPU atom, so it never counts as a free GPU.
    """
    from django.apps import apps

    booking = apps.get_model("capacity", "DeviceBooking")
    now = timezone.now()
    # Bounds, not `during @> now`: Postgres probed the GiST index on `during` once per device (0.74 s
    # for a 1,000-node pool with a year of bookings, bench_scale); the bounds go by device_id.
    covering = {"during__startswith__lte": now, "during__endswith__gt": now}
    busy = booking.objects.filter(device=OuterRef("devices__pk"), **covering)
    split = Device.objects.filter(parent=OuterRef("devices__pk"), verified=True)
    parent_busy = booking.objects.filter(device=OuterRef("devices__parent"), **covering)
    return queryset.annotate(
        free_now=Count(
            "devices",
            filter=Q(devices__device_class=device_class, devices__healthy=True, devices__bookable=True)
            & ~Q(Exists(busy))
            & ~Q(Exists(split))
            & ~Q(Exists(parent_busy))
            & state_q("schedulable", viewer),
            distinct=True,
        )
    )


class StateField(django_filters.fields.ChoiceField):
    """A state of the vocabulary; surrounding spaces are forgiven, as in the other filters."""

    default_error_messages = {"invalid_choice": f"state must be one of {', '.join(STATE_CHOICES)}"}

    def to_python(self, value):
        return super().to_python(value).strip()


class StateFilter(django_filters.ChoiceFilter):
    field_class = StateField


class WholeNumberFilter(django_filters.CharFilter):
    """A count: ASCII digits only (str.isdigit() also accepts '²', which int() refuses)."""

    def __init__(self, *args, **kwargs):
        message = f"{kwargs.pop('param')} must be a whole number"
        kwargs["validators"] = [RegexValidator(r"\A[0-9]{1,6}\Z", message)]
        super().__init__(*args, **kwargs)


class NodeFilterSet(django_filters.FilterSet):
    """Filter nodes by name, state (as the viewer sees it), label and GPUs bookable now."""

    q = django_filters.CharFilter(label="Name", method="filter_name")
    # Labels are given: filters with a method and no model field would read "[invalid name]".
    state = StateFilter(
        label="State", choices=[(s, s) for s in STATE_CHOICES], empty_label="any state", method="filter_state"
    )
    label = django_filters.CharFilter(
        label="Label",
        method="filter_label",
        widget=forms.TextInput(attrs={"placeholder": "key or key=value"}),
    )
    free_gpus = WholeNumberFilter(
        param="free_gpus",
        label="Free GPUs ≥",
        method="filter_free_gpus",
        widget=forms.TextInput(attrs={"inputmode": "numeric", "size": 3, "placeholder": "0"}),
    )

    class Meta:
        model = Node
        fields: list[str] = []

    def __init__(self, data=None, queryset=None, *, viewer: Viewer, **kwargs):
        super().__init__(data, queryset, **kwargs)
        self.viewer = viewer

    def filter_name(self, queryset, name, value):
        return queryset.filter(name__icontains=value)

    def filter_state(self, queryset, name, value):
        return queryset.filter(state_q(value, self.viewer))

    def filter_label(self, queryset, name, value):
        key, _, wanted = value.partition("=")
        labels = NodeLabel.objects.filter(node=OuterRef("pk"), key=key.strip())
        if wanted.strip() and wanted.strip() != "*":
            labels = labels.filter(value=wanted.strip())
        return queryset.filter(Exists(labels))

    def filter_free_gpus(self, queryset, name, value):
        return free_gpus_now(queryset, self.viewer).filter(free_now__gte=int(value))

    def first_error(self) -> FilterError | None:
        """Return the first invalid parameter as a FilterError, or None when every value is good."""
        if self.is_valid():
            return None
        field, messages = next(iter(self.errors.items()))
        return FilterError(field, messages[0])


def filter_nodes(queryset: QuerySet[Node], params: Mapping[str, str], viewer: Viewer) -> QuerySet[Node]:
    """Apply `state`, `label` (key or key=value), `free_gpus` (at least n bookable now) and `q` (name).

    The states and free GPUs are as the viewer sees them.

    Raise FilterError for the first value that cannot be used.
    """
    filterset = NodeFilterSet(params, queryset, viewer=viewer)
    error = filterset.first_error()
    if error is not None:
        raise error
    return filterset.qs
