"""Previewing and booking: the request form and the ranked and rejected nodes."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import partial

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods, require_POST

from capacity import series_hooks, services
from capacity.access import scope_for
from capacity.db.literals import to_datetime
from capacity.forms import BookForm, RequestForm, SelectorForm
from capacity.placement import (
    CapacityError,
    format_selector,
    parse_selector,
)
from capacity.placement.reasons import rejection_label
from capacity.services.earliest_start import never_fits_prepared
from capacity.services.prepare import prepare
from config.web import login_required, page, wants_partial
from inventory.models import Device

from .availability_chart import pool_charts
from .common import (
    atom_labels,
    visible_pools,
    visible_tenants,
)
from .pool_sections import booking_quota
from .reservations import reservation_rows

# --- preview and booking ---------------------------------------------------------------------------


# The form field each never-fits limit is about ("request": above the form).
NEVER_FIELDS = {"class": "device_class", "selector": "selector", "count": "count", "quota": "count"}


def never_field(field: str, message: str) -> str | None:
    """Return the form field a never-fits answer belongs next to (None: above the form).

    A request no node could take even empty names the scalar that is short: vCPU or memory.
    """
    if field == "request":
        if re.search(r"\bvcpu\b", message):
            return "vcpu"
        if "memoryGiB" in message:
            return "memory"
    return NEVER_FIELDS.get(field)


# How long the booking form holds its answer for the pool-lease placer's batch.
BOOKING_WAIT_MS = 2_000


def _request_form(request: HttpRequest, form_class=RequestForm, data=None, initial=None):
    """Return the request form with the tenants and pools this user may choose."""
    return form_class(
        data,
        initial=initial,
        tenants=visible_tenants(request.user),
        pools=visible_pools(request.user),
    )


FITS_RE = re.compile(r"^fits: (\d+) of (\d+) (\S+) free( matching the selector)?$")


@dataclass
class RejectedGroup:
    """Rejections that read the same, as the pending summary groups them."""

    count: int
    label: str
    nodes: list[tuple[str, str, str]]  # (node, filter, reason)

    @property
    def plain(self) -> str:
        """Return the spec's terse fit reason in words ("8 of 9 gpu free" reads as 8 free of 9 asked)."""
        found = FITS_RE.match(self.label)
        if found is None:
            return ""
        free, wanted, device_class, selector = found.groups()
        each = "each has" if self.count > 1 else "has"
        matching = " matching the selector" if selector else ""
        return f"{each} {free} {device_class} free{matching}, of the {wanted} requested"


def explain(result: services.Preview, scope: services.Scope = services.EVERYONE, lease: bool = False) -> dict:
    """Return a preview as the page shows it: ranked candidates and every rejection, grouped.

    A lease's candidates are the leasable nodes, best first. Reasons are redacted for the caller:
    a tenant never reads another tenant's name.
    """
    plan = result.plan
    ranked = list(plan.gang or plan.ranked)
    shown = ranked[: services.MAX_PREVIEW_CANDIDATES]
    labels = atom_labels([a for r in shown for group in r.atoms for a in group])
    scorers: list[str] = []
    for r in shown:
        scorers.extend(s for s in r.scores if s not in scorers)
    candidates = [
        {
            "node": r.node_id,
            "atoms": [(labels.get(a, a), a) for group in r.atoms for a in group],
            "scores": [r.scores.get(s) for s in scorers],
            "score": r.score,
        }
        for r in shown
    ]
    groups: dict[str, RejectedGroup] = {}
    for rejection in plan.rejected:
        label = services.redact(rejection_label(rejection), scope)
        group = groups.setdefault(label, RejectedGroup(0, label, []))
        group.count += 1
        group.nodes.append((rejection.node_id, rejection.filter, services.redact(rejection.reason, scope)))
    # Most common first, ties in first-seen order, as the pending summary orders them.
    ordered = sorted(groups.values(), key=lambda g: -g.count)
    return {
        "fits": result.fits,
        "reason": services.redact(result.reason, scope),
        "candidates": candidates,
        "more": len(ranked) - len(shown),
        "fitting": len(ranked),
        "scorers": scorers,
        "rejected": ordered,
        "rejected_count": len(plan.rejected),
        "node_count": plan.node_count,
        "lease": lease,
        "preemptible": preemptible(result.preemptible, scope),
    }


def preemptible(found: dict | None, scope: services.Scope) -> dict | None:
    """Return the spot reservations a regular request would preempt, as the page lists them.

    The caller's own are links; another tenant's are counted, not named (services.preview).
    """
    if not found or not (found.get("reservations") or found.get("others")):
        return None
    starts = found.get("startsAt")
    if isinstance(starts, str):
        starts = parse_datetime(starts)
    return {
        "reservations": [int(pk) for pk in found["reservations"]],
        "others": found.get("others", 0),
        "nodes": found.get("nodes", []),
        "count": len(found["reservations"]) + found.get("others", 0),
        "reclaims": found.get("reclaims", 0),
        "starts_at": starts,
    }


@require_http_methods(["GET", "POST"])
@login_required
def preview(request: HttpRequest) -> HttpResponse:
    """Ask where a request would land now, and why every other node would not take it."""
    answer = None
    if request.method == "POST":
        form = _request_form(request, data=request.POST)
        if form.is_valid():
            try:
                result = services.preview(form.request_data(), scope=scope_for(request.user), explain=True)
            except CapacityError as err:
                form.add_capacity_error(err)
            else:
                answer = explain(result, scope_for(request.user), lease=form.lease)
                if not result.fits:
                    answer.update(_when(request, result))
    else:
        form = _request_form(
            request, initial={k: v for k, v in request.GET.items() if k in ("pool", "tenant")}
        )
    return page(
        request,
        "capacity/preview.html",
        {"nav": "preview", "form": form, "answer": answer, "device_classes": _device_classes(request.user)},
        partial="preview-body",
    )


def _when(request: HttpRequest, result: services.Preview) -> dict:
    """Return what the page says when nothing fits now: never, or the earliest start and the hints.

    The earliest start comes with the form's fields to book exactly that window (full precision:
    a start rounded to the minute could overlap the booking that ends then).
    """
    scope = scope_for(request.user)
    out: dict = {
        "never": services.redact(result.unsatisfiable or "", scope),
        "hints": [services.redact(h, scope) for h in result.hints],
    }
    if result.unsatisfiable or result.preemptible:
        return out
    if result.earliest is None:
        out["earliest_reason"] = result.no_start
        return out
    # The earliest start is shown with its button: its hint would say it again.
    out["hints"] = [h for h in out["hints"] if not h.startswith("fits from ")]
    window, nodes = result.earliest
    start, end = to_datetime(window.start), to_datetime(window.end)
    kept = [(k, v) for k, v in request.POST.items() if k not in REBOOK_DROPPED]
    out["earliest"] = {
        "start": start,
        "end": end,
        "nodes": nodes,
        "fields": [
            *kept,
            ("start", start.isoformat()),
            ("end", end.isoformat()),
            ("idempotency_key", f"web-{uuid.uuid4().hex}"),
        ],
    }
    return out


# Fields the earliest-start button replaces: the window, and the key (a new one is made).
REBOOK_DROPPED = frozenset({"csrfmiddlewaretoken", "start", "end", "duration", "idempotency_key"})


def _availability(user) -> list:
    """Return the availability chart of every pool the user may book, as that user may book it."""
    return pool_charts(visible_pools(user), scope_for(user))


def _device_classes(user) -> list[str]:
    """Return the device classes of the pools the user may book, in name order."""
    pools = [p.pk for p in visible_pools(user)]
    classes = Device.objects.filter(node__pool__in=pools).order_by("device_class")
    return list(classes.values_list("device_class", flat=True).distinct())


@require_POST
@login_required
def selector_check(request: HttpRequest) -> HttpResponse:
    """Parse a selector as the user types: the error, or the selector as the services read it."""
    form = SelectorForm(request.POST)
    form.is_valid()
    text = form.cleaned_data.get("selector", "").strip()
    error = formatted = None
    if text:
        try:
            formatted = format_selector(parse_selector(text))
        except CapacityError as err:
            error = err.message
    return page(
        request,
        "capacity/request_fields.html",
        {"selector_error": error, "selector_formatted": formatted},
        partial="selector-check",
    )


def _book(request: HttpRequest, form: BookForm, scope: services.Scope) -> services.ReserveResult | None:
    """Reserve what a valid form asks for, or put the refusal next to its field and return None.

    A request no node of the pool could ever take is refused here, before anything is created.
    The request is prepared once: the never-fits check and the create share it and its planner.
    """
    # With the pool-lease placer, answer with the batch's outcome when it runs soon.
    data = {**form.request_data(), "wait": {"timeoutMs": BOOKING_WAIT_MS}}
    # Admitted as the API admits: a policy plugin sees the browser's bookings too.
    admission = services.admission_context(data.get("tenantId"), request.user.get_username(), "user")
    try:
        prepared = prepare(data, scope=scope)
        never, planner = never_fits_prepared(prepared)
        if never is not None:
            form.add_error(never_field(never.field, never.message), never.message)
            return None
        return services.reserve(data, scope=scope, admission=admission, prepared=prepared, planner=planner)
    except CapacityError as err:
        form.add_capacity_error(err)
        return None


@require_http_methods(["GET", "POST"])
@login_required
def book(request: HttpRequest) -> HttpResponse:
    """Book capacity; answers placed with the node and atoms, or pending with the reason."""
    booked = None
    scope = scope_for(request.user)
    booked_series = None
    if request.method == "POST":
        form = _request_form(request, BookForm, data=request.POST)
        # A series is the series app's to book (capacity.series_hooks): it answers with its first
        # occurrence, whose page lists the others, and the series' card.
        book_series = series_hooks.way("book_form")
        if form.is_valid() and form.series and book_series is not None:
            first, booked_series = book_series(request, form, scope) or (None, None)
            result = services.ReserveResult(first, created=True) if first else None
        else:
            result = _book(request, form, scope) if form.is_valid() else None
        if result is not None:
            if not wants_partial(request):
                return redirect("reservation-detail", pk=result.reservation.pk)
            booked = reservation_rows([result.reservation], scope)[0]
            # A fresh key, so the next booking from this page is a new one.
            again = {k: v for k, v in form.cleaned_data.items() if k != "idempotency_key"}
            form = _request_form(request, BookForm, initial=again)
    else:
        form = _request_form(request, BookForm, initial={k: v for k, v in request.GET.items() if k == "pool"})
    return page(
        request,
        "capacity/book.html",
        {
            "nav": "book",
            "form": form,
            "booked": booked,
            "booked_series": booked_series,
            "device_classes": _device_classes(request.user),
            # The chosen tenant's quota over the window the form asks for (updated with each answer).
            "quotas": booking_quota(form, scope),
            # Drawn only with the whole page, not with the form's htmx answers.
            "availability": partial(_availability, request.user),
            "availability_open": form["pool"].value(),  # the chosen pool's chart opens
            "availability_tenant_view": not scope.sees_every_tenant,
        },
        partial="book-body",
    )
