"""Forms that turn browser input into the services' request data, and their errors back into fields."""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Any

from django import forms
from django.urls import reverse
from django.utils import timezone

from inventory.models import Pool, Tenant

from . import services
from .models import Reservation
from .placement import CapacityError
from .placement.fields import DAYS, MAX_OCCURRENCES, MAX_SPAN_DAYS, request_body

# Where a service message names a field ("devices[0].count must …"), the form field it belongs to.
# First match wins, so longer prefixes come first.
FIELD_OF_MESSAGE = (
    # A lease given devices, and a request that claims nothing, are answered at the GPU count.
    (re.compile(r"^devices\[0\]\.count\b|^devices: |^devices or resources: "), "count"),
    (re.compile(r"^devices\[0\]\.class\b"), "device_class"),
    (re.compile(r"^devices\[0\]\.selector\b|^selector\b"), "selector"),
    (re.compile(r"^devices\[0\]\.topology\b|^topology\b"), "nvlink"),
    (re.compile(r"^resources\.vcpu\b"), "vcpu"),
    (re.compile(r"^resources\.memoryGiB\b"), "memory"),
    (re.compile(r"^resources: a whole-node lease\b"), "vcpu"),
    (re.compile(r"^gang\.size\b|^gang: "), "nodes"),
    (re.compile(r"^gang\.topologyKey\b"), "gang_key"),
    (re.compile(r"^binding\b"), "binding"),
    (re.compile(r"^priority\b"), "priority"),
    (re.compile(r"^keepWhenIdle\b"), "keep_when_idle"),
    (re.compile(r"^during\.start\b"), "start"),
    (re.compile(r"^during\.end\b|^during must be a non-empty window"), "end"),
    (re.compile(r"^duration\b|^give either duration or during"), "duration"),
    # The pool policy's limits (POLICY_LIMIT, policy.limits).
    (re.compile(r"^maxDuration is "), "duration"),
    (re.compile(r"^maxLeadTime is "), "start"),
    (re.compile(r"^maxFutureGpuHours is "), "count"),
    # A series' rule (series/repeat.py) and its allOrNothing refusal (series/book.py).
    (re.compile(r"^repeat\.byDay\b"), "repeat_on"),
    (re.compile(r"^repeat\.until\b"), "repeat_until"),
    (re.compile(r"^repeat\.count\b"), "repeat_count"),
    (re.compile(r"^repeat\b"), "repeat"),
    (re.compile(r"^during: each window must end before"), "end"),
    (re.compile(r"^allOrNothing\b"), "all_or_nothing"),
    (re.compile(r"^tenantId\b|^no tenant |^you may not book for tenant "), "tenant"),
    (re.compile(r"^poolId\b|^no pool "), "pool"),
)


def _selector_term(found: re.Match) -> str:
    """Return devices[0].selector[1].key as the form says it: "the key of the selector's 2nd expression"."""
    n = int(found[1]) + 1
    nth = {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")
    return f"the {found[2]} of the selector's {nth} expression"


# The API's paths in a service message, as the form names those fields.
FORM_TERMS = (
    (re.compile(r" \(during\.start\)"), ""),  # a series' until: "the first window's start" says it
    (
        re.compile(r"^during must be a non-empty window: during\.end must be after during\.start"),
        "the end must be after the start",
    ),
    (re.compile(r"\bdevices\[0\]\.selector\[(\d+)\]\.(\w+)\b"), _selector_term),
    (re.compile(r"\bdevices\[0\]\.count\b"), "the GPU count"),
    (re.compile(r"\bdevices\[0\]\.class\b"), "the class"),
    (re.compile(r"\bdevices\[0\]\.selector\b"), "the selector"),
    (re.compile(r"\bdevices\[0\]\.topology\b"), "NVLink"),
    (re.compile(r"\bduring\.start\b"), "the start"),
    (re.compile(r"\bduring\.end\b"), "the end"),
    (re.compile(r"\bresources\.vcpu\b"), "vCPU"),
    (re.compile(r"\bresources\.memoryGiB\b"), "memory GiB"),
    (re.compile(r"\bgang\.size\b"), "the number of nodes"),
    (re.compile(r"\bgang\.topologyKey\b"), "the sharing label"),
    (re.compile(r"\brepeat\.byDay\b"), "the days"),
    (re.compile(r"\brepeat\.until\b"), "until"),
    (re.compile(r"\brepeat\.count\b"), "the count"),
    (re.compile(r"\brepeat\.interval\b"), "the interval"),
    (re.compile(r"\btenantId\b"), "the tenant"),
    (re.compile(r"\bpoolId\b"), "the pool"),
    (re.compile(r" \(epoch milliseconds\)"), ""),
)


def in_form_terms(message: str) -> str:
    """Return a service message with the API's field paths named as the form names them."""
    for pattern, words in FORM_TERMS:
        message = pattern.sub(words, message)
    return message


def field_for_message(message: str) -> str | None:
    """Return the form field a service message names, or None for a form-level error."""
    for pattern, name in FIELD_OF_MESSAGE:
        if pattern.search(message):
            return name
    return None


# Times are read and shown as ISO 8601 in UTC, as everywhere else in Berth: a browser's date and
# datetime-local inputs show the machine's locale (mm/dd/yyyy) instead.
ISO_DATETIME = {"placeholder": "YYYY-MM-DD HH:MM", "class": "medium", "autocomplete": "off"}


class AsciiIntegerField(forms.IntegerField):
    """An integer written in 0-9: int() reads "５" and "١" as 5 and 1, which the API refuses."""

    def to_python(self, value: Any) -> int | None:
        if isinstance(value, str) and value.strip() and not value.strip().lstrip("+-").isascii():
            raise forms.ValidationError("enter a whole number in the digits 0-9", code="invalid")
        return super().to_python(value)


class RequestForm(forms.Form):
    """What a placement request asks for; the services validate it, this form only shapes it.

    Numbers are parsed here, but their rules (count ≥ 1, …) are the services', so that the browser,
    the API and the CLI answer with the same messages.
    """

    # The device fields below (count to memory) are the request for devices; the lease fields for
    # whole nodes. The page's script disables the set not chosen, so the browser sends only one;
    # whatever is sent goes to the services, which refuse a lease given devices at the field.
    DEVICE_FIELDS = ("count", "device_class", "selector", "nvlink", "vcpu", "memory")

    tenant = forms.ChoiceField()
    pool = forms.ChoiceField()
    binding = forms.ChoiceField(
        required=False,
        initial=Reservation.Binding.NONE,
        label="Book",
        choices=[(Reservation.Binding.NONE, "GPUs or MIG slices"), (Reservation.Binding.NODE, "Whole node")],
        widget=forms.RadioSelect(attrs={"class": "binding-choice"}),
    )
    priority = forms.ChoiceField(
        required=False,
        initial=Reservation.Priority.REGULAR,
        label="Priority",
        choices=[(Reservation.Priority.REGULAR, "Regular"), (Reservation.Priority.SPOT, "Spot")],
        help_text="Spot runs on free capacity; a regular booking may take it back (preempt it).",
        widget=forms.RadioSelect,
    )
    nodes = AsciiIntegerField(
        required=False,
        initial=1,
        label="Nodes",
        help_text="More than one books a gang of whole nodes.",
        widget=forms.NumberInput(attrs={"min": 1, "class": "narrow"}),
    )
    gang_key = forms.CharField(
        required=False,
        label="All sharing label",
        help_text="Optional: a label key the nodes of a gang share, such as rack.",
        widget=forms.TextInput(attrs={"class": "medium", "autocomplete": "off"}),
    )
    count = AsciiIntegerField(
        required=False, initial=1, label="GPUs", widget=forms.NumberInput(attrs={"min": 0, "class": "narrow"})
    )
    device_class = forms.CharField(
        required=False,  # blank reads as gpu
        initial="gpu",
        label="Class",
        widget=forms.TextInput(attrs={"list": "device-classes", "class": "medium"}),
    )
    selector = forms.CharField(
        required=False,
        widget=forms.TextInput(
            attrs={"placeholder": "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80", "autocomplete": "off"}
        ),
    )
    nvlink = forms.BooleanField(required=False, label="All GPUs linked by NVLink")
    vcpu = AsciiIntegerField(
        required=False, label="vCPU", widget=forms.NumberInput(attrs={"class": "narrow"})
    )
    memory = AsciiIntegerField(
        required=False, label="Memory GiB", widget=forms.NumberInput(attrs={"class": "narrow"})
    )
    duration = forms.CharField(
        required=False,
        initial="1d",
        help_text="30m, 12h, 3d or 2w: from now, or from the start when you give one.",
        widget=forms.TextInput(attrs={"class": "narrow"}),
    )
    start = forms.DateTimeField(
        required=False,
        label="Start (UTC)",
        widget=forms.DateTimeInput(attrs=ISO_DATETIME, format="%Y-%m-%d %H:%M"),
    )
    end = forms.DateTimeField(
        required=False,
        label="End (UTC)",
        widget=forms.DateTimeInput(attrs=ISO_DATETIME, format="%Y-%m-%d %H:%M"),
    )

    def clean(self) -> dict[str, Any]:
        """Read the window as a user means it: a start with a duration books start + duration."""
        data = super().clean()
        start, end, duration = data.get("start"), data.get("end"), (data.get("duration") or "").strip()
        if end is not None and start is None:
            self.add_error("start", "give a start with the end")
        elif start is not None and end is not None:
            data["duration"] = ""  # an explicit window wins over the duration field's default
        elif start is not None:
            if not duration:
                self.add_error("end", "give an end or a duration")
            else:
                try:
                    data["end"] = start + services.parse_duration(duration)
                except CapacityError as err:
                    self.add_error("duration", err.message)
                else:
                    data["duration"] = ""
        return data

    def __init__(self, *args: Any, tenants: list[Tenant], pools: list[Pool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].choices = [(t.slug, f"{t.slug} — {t.name}") for t in tenants]
        self.fields["pool"].choices = [(p.slug, f"{p.slug} ({p.site.slug})") for p in pools]
        if len(tenants) == 1:
            self.fields["tenant"].initial = tenants[0].slug
        # Live validation as the user types; the full submit validates again on the server.
        self.fields["selector"].widget.attrs.update(
            {
                "hx-post": reverse("selector-check"),
                "hx-trigger": "input changed delay:300ms",
                "hx-target": "#selector-check",
                "hx-swap": "outerHTML",
                "aria-describedby": "selector-check",
            }
        )

    def request_data(self) -> dict[str, Any]:
        """Return the cleaned input as the services' request data (camelCase, as the API takes it)."""
        data = self.cleaned_data
        gang = None
        if self.lease:
            size, key = data.get("nodes"), (data.get("gang_key") or "").strip()
            if key or (size is not None and size != 1):
                gang = {"size": size, **({"topologyKey": key} if key else {})}
        devices = None
        if data.get("count") is not None:
            device: dict[str, Any] = {"class": data.get("device_class") or "gpu", "count": data["count"]}
            if data.get("selector"):
                device["selector"] = data["selector"]
            devices = [device]
        resources = {
            name: data[field]
            for name, field in (("vcpu", "vcpu"), ("memoryGiB", "memory"))
            if data.get(field)
        }
        during = None
        if data.get("start") or data.get("end"):
            during = {name: _iso(data[name]) for name in ("start", "end") if data.get(name) is not None}
        spot = data.get("priority") == Reservation.Priority.SPOT
        return request_body(
            tenant_id=data["tenant"],
            pool_id=data["pool"],
            binding=Reservation.Binding.NODE if self.lease else None,
            gang=gang,
            priority=Reservation.Priority.SPOT if spot else None,
            devices=devices,
            topology="nvlink-all" if data.get("nvlink") else None,
            resources=resources or None,
            duration=data["duration"].strip() if data.get("duration") else None,
            during=during,
        )

    @property
    def lease(self) -> bool:
        """Return whether the user chose a whole node (binding node) rather than devices."""
        value = self.cleaned_data.get("binding") if hasattr(self, "cleaned_data") else self["binding"].value()
        return value == Reservation.Binding.NODE

    def add_capacity_error(self, err: CapacityError) -> None:
        """Show a service refusal next to the field its message names, else above the form."""
        self.add_error(field_for_message(err.message), in_form_terms(err.message))


def _iso(value) -> str:
    # A time typed without a zone is read in the current one (UTC), as the label says.
    if timezone.is_naive(value):
        value = timezone.make_aware(value)
    return value.isoformat()


class BookForm(RequestForm):
    """A booking: a request plus an idempotency key, so a double submit books once."""

    idempotency_key = forms.CharField(widget=forms.HiddenInput, required=False)
    keep_when_idle = forms.BooleanField(
        required=False,
        label="Keep when idle",
        help_text="Never released for idleness (still marked idle), where the pool's policy allows it.",
    )

    # A series (docs/series.md): "repeat weekly on … until …". The rule is the series app's
    # (series/repeat.py, booked through capacity.series_hooks): this form only shapes it, so its
    # messages are the API's.
    repeat = forms.ChoiceField(
        required=False,
        label="Repeat",
        choices=[("", "Once"), ("daily", "Daily"), ("weekly", "Weekly")],
        help_text="Each occurrence is a reservation of its own, at the same time of day (UTC).",
    )
    repeat_on = forms.MultipleChoiceField(
        required=False,
        label="On",
        choices=list(zip(DAYS, ("Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"), strict=True)),
        widget=forms.CheckboxSelectMultiple(attrs={"class": "day-choice"}),
        help_text="Weekly: the days. Daily: only these days (none: every day).",
    )
    repeat_until = forms.CharField(
        required=False,
        label="Until",
        help_text="The last day (UTC), or give a count.",
        widget=forms.TextInput(attrs={"placeholder": "YYYY-MM-DD", "class": "medium", "autocomplete": "off"}),
    )
    repeat_count = AsciiIntegerField(
        required=False,
        label="Times",
        help_text=f"At most {MAX_OCCURRENCES}, within {MAX_SPAN_DAYS} days.",
        widget=forms.NumberInput(attrs={"class": "narrow", "min": 1}),
    )
    all_or_nothing = forms.BooleanField(
        required=False, label="All or nothing", help_text="Book every occurrence, or none if one would wait."
    )
    SERIES_FIELDS = ("repeat_on", "repeat_until", "repeat_count", "all_or_nothing")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial.setdefault("idempotency_key", f"web-{uuid.uuid4().hex}")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("repeat") and any(data.get(name) for name in self.SERIES_FIELDS):
            self.add_error("repeat", "choose daily or weekly to book a series")
        return data

    @property
    def series(self) -> bool:
        """Return whether the form books a series (a repeat chosen)."""
        return bool(self.cleaned_data.get("repeat"))

    def request_data(self) -> dict[str, Any]:
        out = super().request_data()
        data = self.cleaned_data
        if data.get("idempotency_key"):
            out["idempotencyKey"] = data["idempotency_key"]
        if data.get("keep_when_idle"):
            out["keepWhenIdle"] = True
        if data.get("repeat"):
            repeat: dict[str, Any] = {"freq": data["repeat"]}
            if data.get("repeat_on") or data["repeat"] == "weekly":
                repeat["byDay"] = list(data.get("repeat_on") or [])
            if (data.get("repeat_until") or "").strip():
                repeat["until"] = data["repeat_until"].strip()
            if data.get("repeat_count") is not None:
                repeat["count"] = data["repeat_count"]
            out["repeat"] = repeat
            if data.get("all_or_nothing"):
                out["allOrNothing"] = True
        return out


class SelectorForm(forms.Form):
    """The selector field alone, for live validation."""

    selector = forms.CharField(required=False)


class TimelineForm(forms.Form):
    """Where the node page's booking timeline starts: `?from=2027-02-01` (UTC); empty is two days ago."""

    FIRST, LAST = date(2000, 1, 1), date(2099, 12, 31)

    start = forms.DateField(
        required=False,
        label="From",
        widget=forms.DateInput(
            attrs={"placeholder": "YYYY-MM-DD", "pattern": r"\d{4}-\d{2}-\d{2}", "class": "medium"}
        ),
        error_messages={"invalid": "must be a date, YYYY-MM-DD"},
    )

    def add_prefix(self, field_name: str) -> str:
        # The query parameter is `from`, a Python keyword: the field is `start` behind that name.
        return "from" if field_name == "start" else super().add_prefix(field_name)

    def clean_start(self) -> date | None:
        day = self.cleaned_data.get("start")
        if day is not None and not self.FIRST <= day <= self.LAST:
            raise forms.ValidationError(f"must be a date from {self.FIRST} to {self.LAST}")
        return day


class DrainForm(forms.Form):
    """Drain a node from its page: why (optional, shown to operators while the node drains).

    The node page draws it; the maintenance app's view drains with it (maintenance.pages, node_drain).
    """

    # No max_length (and so no maxlength attribute a browser would cut a paste at, silently): the
    # drain refuses a reason past 200 characters and the form shows why, next to the field.
    reason = forms.CharField(
        required=False,
        strip=False,
        label="Reason",
        widget=forms.TextInput(attrs={"placeholder": "optional, e.g. fan replacement", "size": 28}),
    )
