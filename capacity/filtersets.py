"""The reservation filters, declared once and used by the reservations page and the API list.

Both pass the caller's reservations (services.list_reservations with its scope) as the queryset, so a
tenant filtering on another tenant's pool, node or name finds nothing rather than learning whether it
exists. Values that cannot be read (a status that is none, a time that is not one) are errors, named
after their parameter: the API answers 400, the page shows them next to the field.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.dateparse import parse_date, parse_datetime

from capacity.models import AnyAllocation, Reservation
from inventory.models import Pool, Tenant

INSTANT_HELP = "an ISO 8601 date or time in UTC (2027-02-01, 2027-02-01T12:00) or epoch milliseconds"
STATUS_MESSAGE = f"must be one of {', '.join(Reservation.Status.values)}"
# Epoch milliseconds up to the year 9999 have at most 15 digits; more is no time a reservation has.
MAX_EPOCH_MS = int(datetime(9999, 12, 31, tzinfo=UTC).timestamp() * 1000)


# What each parameter means, for the API's schema (the page's fields speak for themselves).
DESCRIPTIONS = {
    "tenant": "Tenant slug (a tenant filtering on another tenant finds nothing).",
    "pool": "Pool slug.",
    "node": (
        "Node name: reservations that hold devices on it, or held them until they ended (a booking"
        " moved off the node by a repair or a drain no longer counts)."
    ),
    "status": "Reservation status.",
    "from": (
        f"With `to`, reservations whose window overlaps [from, to): here, those that still hold their"
        f" window after this moment (a reservation released earlier does not). Takes {INSTANT_HELP}."
    ),
    "to": f"Reservations that start before this moment; after `from`. Takes {INSTANT_HELP}.",
}


class InstantField(forms.Field):
    """A moment as the API takes one: ISO 8601 (a date means its midnight; no zone means UTC) or epoch ms."""

    default_error_messages = {"invalid": f"must be {INSTANT_HELP}"}

    def to_python(self, value):
        text = (value or "").strip()
        if not text:
            return None
        try:
            if text.isascii() and text.isdigit():
                ms = int(text)
                if ms > MAX_EPOCH_MS:
                    raise ValueError(text)
                return datetime.fromtimestamp(ms / 1000, tz=UTC)
            moment = parse_datetime(text)
            if moment is None:
                day = parse_date(text)
                moment = datetime.combine(day, time.min) if day is not None else None
        except (ValueError, OverflowError, OSError):
            moment = None
        if moment is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class InstantFilter(django_filters.Filter):
    """A filter whose value is an InstantField moment."""

    field_class = InstantField


class ReservationFilterForm(forms.Form):
    """The filters' form: a window must end after it starts."""

    def clean(self):
        data = super().clean()
        start, end = data.get("from"), data.get("to")
        if start is not None and end is not None and end <= start:
            self.add_error("to", "must be after from")
        return data


class ReservationFilterSet(django_filters.FilterSet):
    """Filter reservations by tenant, pool, node, status and a window they overlap."""

    # By id, not by a join on the slug: the lists read live and moved reservations through a view,
    # and only a constant id lets each side read its (tenant, newest first) index in order.
    tenant = django_filters.CharFilter(method="by_tenant", label="Tenant", widget=forms.Select)
    pool = django_filters.CharFilter(method="by_pool", label="Pool", widget=forms.Select)
    node = django_filters.CharFilter(
        method="on_node",
        label="Node",
        widget=forms.TextInput(attrs={"placeholder": "node name", "size": 14}),
    )
    status = django_filters.ChoiceFilter(
        choices=Reservation.Status.choices,
        label="Status",
        empty_label="any status",
        error_messages={"invalid_choice": STATUS_MESSAGE},
    )

    class Meta:
        model = Reservation
        fields: list[str] = []
        form = ReservationFilterForm

    def __init__(self, *args, tenants=(), pools=(), **kwargs):
        """Offer the caller's `tenants` and `pools` (slugs) as the page's choices."""
        super().__init__(*args, **kwargs)
        self.filters["tenant"].extra["widget"] = forms.Select(
            choices=[("", "all tenants"), *((slug, slug) for slug in tenants)]
        )
        self.filters["pool"].extra["widget"] = forms.Select(
            choices=[("", "all pools"), *((slug, slug) for slug in pools)]
        )

    def by_tenant(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            tenant_id__in=list(Tenant.objects.filter(slug=value).values_list("pk", flat=True))
        )

    def by_pool(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(pool_id__in=list(Pool.objects.filter(slug=value).values_list("pk", flat=True)))

    def on_node(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # An allocation ended before its reservation was (moved off by repair or drain) is not on the
        # node; one that ended with the reservation's release or preemption was.
        on_node = AnyAllocation.objects.filter(reservation=OuterRef("pk"), node__name=value).filter(
            Q(released_at__isnull=True) | Q(released_at__gte=OuterRef("released_at"))
        )
        return queryset.filter(Exists(on_node))

    def ends_after(self, queryset: QuerySet, name: str, value: datetime) -> QuerySet:
        # A reservation released early held nothing after its release.
        return queryset.filter(Q(ends_at__gt=value), Q(released_at__isnull=True) | Q(released_at__gt=value))

    def starts_before(self, queryset: QuerySet, name: str, value: datetime) -> QuerySet:
        return queryset.filter(starts_at__lt=value)


# `from` is a Python keyword, so the window's two ends join the declared filters here, not in the class.
for _name, _filter in (
    (
        "from",
        InstantFilter(
            method="ends_after",
            label="From (UTC)",
            widget=forms.TextInput(attrs={"placeholder": "YYYY-MM-DD", "size": 16}),
        ),
    ),
    (
        "to",
        InstantFilter(
            method="starts_before",
            label="To (UTC)",
            widget=forms.TextInput(attrs={"placeholder": "YYYY-MM-DD", "size": 16}),
        ),
    ),
):
    ReservationFilterSet.declared_filters[_name] = ReservationFilterSet.base_filters[_name] = _filter


def error_text(errors) -> str:
    """Return a filter form's errors as one line that names each parameter: `from: must be …`."""
    return "; ".join(f"{name}: {message}" for name, messages in errors.items() for message in messages)
