"""A user's reservations, one reservation, and releasing it."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import datetime

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST

from capacity import series_hooks, services
from capacity.access import is_operator, scope_for
from capacity.filtersets import ReservationFilterSet
from capacity.models import Reservation
from capacity.models.reservations import PREEMPTED_CONDITION, QUEUED_CONDITION
from capacity.placement import (
    NOT_FOUND,
    CapacityError,
)
from capacity.placement.reasons import format_groups
from capacity.render import lent_from, maintenance_notice
from capacity.services.rebook import Rebooked, rebook_earliest
from capacity.services.repair import REPAIR_PENDING, REPAIRED
from capacity.services.reservation_events import condition_history
from capacity.services.reservations import lent_notices
from config import csvcells
from config.web import login_required, page, safe_next, wants_partial

from .common import RESERVATIONS_PER_PAGE, asked_text, atom_labels, utc_message, utc_words, visible_tenants
from .page_cache import all_versions, kept_fragments, page_query, page_url
from .pool_sections import quota_cards
from .usage_cells import fill_usage, usage_cell

# --- reservations ----------------------------------------------------------------------------------


@dataclass
class ReservationRow:
    """A reservation with where it landed: nodes and atoms, or why it is pending."""

    reservation: Reservation
    allocations: list[dict]
    message: str
    why: str = "Unschedulable"  # the condition the message comes from: Unschedulable, Queued or Preempted
    # BookingRepair's conditions, (type, message): why a booking moved (Repaired) or waits (RepairPending).
    repairs: list[tuple[str, str]] = field(default_factory=list)
    # Allocations a placed reservation no longer holds (BookingRepair moved them): node and when.
    moved_off: list[dict] = field(default_factory=list)
    # The rejection groups past the pending summary's five (count, label): the page lists them too.
    more: list[tuple[int, str]] = field(default_factory=list)
    hint: str = ""  # the best alternative that would fit, found when it went pending
    never: str = ""  # why no node of the pool could ever take it (the Unsatisfiable condition)
    usage: dict | None = None  # its GPU use so far (services.usage_for), None before any sample
    queue: str = ""  # where it waits in its pool's fair queue, in words (detail page only)

    @property
    def maintenance(self) -> dict | None:
        """Return the maintenance window that will take its GPUs, as the API shows it, else None."""
        return maintenance_notice(self.reservation)

    @property
    def more_text(self) -> str:
        """Return "and 1 more: 1 × in maintenance", the nodes the summary left out ("" if none)."""
        if not self.more:
            return ""
        nodes = sum(count for count, _ in self.more)
        return f"and {nodes} more: {format_groups(self.more)}"

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(a["node"] for a in self.allocations))

    @property
    def releasable(self) -> bool:
        # A preempted reservation has ended as a released one has: nothing is left to give back.
        return self.reservation.status not in (Reservation.Status.RELEASED, Reservation.Status.PREEMPTED)

    @property
    def lease(self) -> bool:
        """Return whether the reservation leases whole nodes (binding node)."""
        return self.reservation.binding == Reservation.Binding.NODE

    @property
    def spot(self) -> bool:
        return self.reservation.priority == Reservation.Priority.SPOT

    @property
    def borrowed(self) -> str:
        """Return what a placed reservation borrowed past its tenant's guarantee ("" when nothing)."""
        r = self.reservation
        if r.status != Reservation.Status.PLACED or not getattr(r, "borrowed_gpus", 0):
            return ""
        return (r.condition(services.BORROWED) or {}).get("message", f"borrows {r.borrowed_gpus:g} GPUs")

    @property
    def idle(self) -> str:
        """Return the evidence of its Idle condition ("" when it is not idle)."""
        if self.reservation.status != Reservation.Status.PLACED:
            return ""
        return (self.reservation.condition(services.IDLE) or {}).get("message", "")

    @property
    def awaiting(self) -> bool:
        """Return whether it is placed but waits for an operator's approval (policy/approval.py)."""
        return services.awaiting(self.reservation) is not None

    @property
    def preempt_at(self) -> datetime | None:
        """Return when spot work given notice is taken back (policy.notice), else None."""
        if self.reservation.status != Reservation.Status.PLACED:
            return None
        at = services.preempt_at(self.reservation.conditions)
        return datetime.fromisoformat(at) if at else None

    @property
    def starts_later(self) -> str:
        """Return why a placed booking starts after its window does (spot work's notice), else ""."""
        if self.reservation.status != Reservation.Status.PLACED:
            return ""
        return (self.reservation.condition(services.STARTS_LATER) or {}).get("message", "")

    @property
    def kept(self) -> bool:
        """Return whether its owner keeps it when idle (live rows only: history does not say)."""
        return self.releasable and getattr(self.reservation, "keep_when_idle", False)

    @property
    def repair_pending(self) -> bool:
        return any(kind == REPAIR_PENDING for kind, _ in self.repairs)

    @property
    def usage_html(self) -> str:
        return usage_cell(self.usage)


def reservation_rows(
    reservations: list[Reservation], scope=services.EVERYONE, *, usage: bool = True
) -> list[ReservationRow]:
    """Return rows for these reservations in four queries, whatever their number (three without `usage`).

    Pending reasons and repair notes are redacted for `scope`: a tenant never reads another tenant's name.
    """
    allocations = services.allocations_for(reservations)
    used = services.usage_for([r.pk for r in reservations]) if usage else {}
    labels = atom_labels([uuid for rows in allocations.values() for a in rows for uuid in a["atoms"]])
    by_reservation = {
        pk: [
            {
                "node": a["nodeId"],
                "atoms": [(labels.get(uuid, uuid), uuid) for uuid in a["atoms"]],
                "resources": a["resources"],
                "released_at": a["releasedAt"],
            }
            for a in rows
        ]
        for pk, rows in allocations.items()
    }
    out = []
    for r in reservations:
        condition = None
        if r.status == Reservation.Status.PENDING:
            condition = r.condition(services.UNSCHEDULABLE) or r.condition(QUEUED_CONDITION)
        elif r.status == Reservation.Status.PREEMPTED:
            condition = r.condition(PREEMPTED_CONDITION)
        condition = condition or {}
        repairs = [
            (c["type"], services.redact(c.get("message", ""), scope))
            for c in r.conditions
            if c.get("type") in (REPAIRED, REPAIR_PENDING)
        ]
        held, moved_off = by_reservation.get(r.pk, []), []
        if r.status == Reservation.Status.PLACED:
            # A placed reservation holds only its live allocations; the ended ones were moved.
            moved_off = [a for a in held if a["released_at"] is not None]
            held = [a for a in held if a["released_at"] is None]
        never = r.condition(services.UNSATISFIABLE) if r.status == Reservation.Status.PENDING else None
        out.append(
            ReservationRow(
                r,
                held,
                utc_words(services.redact(condition.get("message", ""), scope)),
                condition.get("type", ""),
                repairs,
                moved_off,
                [(count, services.redact(label, scope)) for count, label in condition.get("more", [])],
                hint=services.redact(condition.get("hint", ""), scope),
                never=services.redact(never.get("message", ""), scope) if never else "",
                usage=used.get(r.pk),
            )
        )
    return out


# --- the list as CSV: what the page lists, filters and all, with each one's GPU use ----------------

# What the kept list reads of the query: its filters and page (others key and show nothing).
LIST_QUERY = ("page", *ReservationFilterSet.base_filters)
CSV_MAX_ROWS = 10_000  # one download at most; narrow the filters for more
_CHUNK = 1_000
COLUMNS = (
    "id", "tenantId", "poolId", "status", "awaitingApproval", "start", "end",
    "releasedAt", "nodes", "atoms", "gpuPercentMean", "gpuPercentP95", "minutesWithoutProcess", "samples"
)  # fmt: skip


def reservations_csv(queryset, scope) -> HttpResponse:
    """Answer the listed reservations, newest first, as CSV (at most CSV_MAX_ROWS).

    Each row is the list's row (reservation_rows: where it is held now, its GPU use), a chunk at a
    time so that its reads stay a few statements per thousand reservations.
    """
    reservations = list(queryset.select_related("tenant", "pool")[:CSV_MAX_ROWS])
    out = io.StringIO()
    writer = csvcells.Writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for at in range(0, len(reservations), _CHUNK):
        for row in reservation_rows(reservations[at : at + _CHUNK], scope):
            r, use = row.reservation, row.usage or {}
            writer.writerow(
                [
                    r.pk,
                    r.tenant.slug,
                    r.pool.slug,
                    r.status,
                    "true" if row.awaiting else "false",
                    csvcells.csv_time(r.starts_at),
                    csvcells.csv_time(r.ends_at),
                    csvcells.csv_time(r.released_at),
                    " ".join(row.nodes),
                    " ".join(uuid for a in row.allocations for _label, uuid in a["atoms"]),
                    *(use.get(k, "") for k in COLUMNS[-4:]),
                ]
            )
    answer = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    answer["Content-Disposition"] = 'attachment; filename="reservations.csv"'
    return answer


@login_required
def reservations(request: HttpRequest) -> HttpResponse:
    """List the user's reservations (operators: everyone's), filtered by tenant, pool, node, status, time.

    A filter value that cannot be read shows its error next to its field and lists nothing: a list
    that silently left the filter out would read as its answer.
    """
    scope = scope_for(request.user)
    tenants = visible_tenants(request.user)
    filters = ReservationFilterSet(
        request.GET,
        services.list_reservations(scope=scope),
        request=request,
        tenants=[t.slug for t in tenants],
        pools=[p.slug for p in services.pools_for(scope)],
    )
    valid = filters.is_valid()
    queryset = filters.qs if valid else filters.queryset.none()
    if request.GET.get("format") == "csv" and valid:
        return reservations_csv(queryset.order_by("-created_at", "-id"), scope)
    tenant = filters.form.cleaned_data.get("tenant") if valid else None
    # Quota: a tenant user's own tenants; an operator's only once a tenant is picked.
    if tenant:
        quota_for = [t for t in tenants if t.slug == tenant]
    else:
        quota_for = [] if scope.sees_every_tenant else tenants
    # The list is kept per its filters and page (page_cache): its links hold nothing else.
    context = {
        "nav": "reservations",
        "form": filters.form,
        "filtered": any(request.GET.get(name) for name in filters.filters),
        "query": page_query(request, LIST_QUERY, leave_out=("page",)),
        "next": page_url(request, LIST_QUERY),
    }

    def draw_list(csrf_token: str) -> tuple[str, datetime | None]:
        page_obj = Paginator(queryset.order_by("-created_at", "-id"), RESERVATIONS_PER_PAGE).get_page(
            request.GET.get("page")
        )
        list_context = {
            **context,
            "is_operator": is_operator(request.user),
            "csrf_token": csrf_token,
            "rows": reservation_rows(list(page_obj.object_list), scope, usage=False),
            "page_obj": page_obj,
            "usage_later": True,
        }
        return render_to_string("capacity/reservations.html#reservation-list", list_context, request), None

    # Kept until a reservation, booking or node of any pool changes; GPU use is read each time.
    kept = kept_fragments(request, all_versions, scope, {"reservation-list": (draw_list, LIST_QUERY)})
    list_html = mark_safe(fill_usage(kept["reservation-list"]))
    # The filter form answers with itself (its errors), the quota and the list; the pager the list.
    body = getattr(request.htmx, "target", None) == "reservations-body"
    if wants_partial(request) and not body:
        response = HttpResponse(list_html)
        patch_vary_headers(response, ["HX-Request"])
        return response
    return page(
        request,
        "capacity/reservations.html",
        {
            **context,
            "list_html": list_html,
            "show_tenant_filter": scope.sees_every_tenant or len(tenants) > 1,
            "quotas": quota_cards(quota_for, scope),
        },
        partial="reservations-body",
    )


def _reservation_or_404(request: HttpRequest, pk: int) -> Reservation:
    try:
        return services.get(pk, scope=scope_for(request.user))
    except CapacityError as err:
        if err.code == NOT_FOUND:
            raise Http404(err.message) from None
        raise


@login_required
def reservation_detail(
    request: HttpRequest, pk: int, keep_error: str = "", status: int = 200
) -> HttpResponse:
    """Show one reservation: status, window, where it landed or why it waits; its request, times, conditions.

    `keep_error`: why its Keep when idle button was refused (the policy app's, policy.views).
    """
    reservation = _reservation_or_404(request, pk)
    scope = scope_for(request.user)
    row = reservation_rows([reservation], scope)[0]
    row.queue = services.queue_text(reservation, scope)
    notices = lent_notices([reservation.pk]) if isinstance(reservation, Reservation) else {}
    return page(
        request,
        "capacity/reservation_detail.html",
        {
            "nav": "reservations",
            "row": row,
            "asked": asked_text(reservation.request.get("input", {})),
            "conditions": list(map(utc_message, services.redacted_conditions(reservation.conditions, scope))),
            "history": list(map(utc_message, condition_history(reservation, scope))),
            "series": services.usage_series(reservation),
            "series_grid": [(0, "100 %"), (60, "50 %"), (120, "0 %")],
            "keep_error": keep_error,
            # Spot work on an idle owner's lent GPUs says whose; an owner lending them may reclaim.
            "lent_from": lent_from(lenders, scope)
            if (lenders := getattr(reservation, "lent_from", None))
            else None,
            # An owner lending may reclaim; once reclaimed under the pool's spotNotice its GPUs are
            # shared until the lent work's preemptAt, and the page says until when instead.
            "lends": any(at is None for at in notices.values()),
            "shared_until": max((at for at in notices.values() if at is not None), default=None),
            # An occurrence's series, as the series app draws it (capacity.series_hooks).
            "occurrence_of": _series_card(reservation, scope),
            # Held for an operator (policy/approval.py): said at the top, with the operators' buttons.
            "awaiting": utc_message(services.awaiting(reservation))
            if isinstance(reservation, Reservation)
            else None,
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@login_required
def release(request: HttpRequest, pk: int) -> HttpResponse:
    """Release a reservation: GET asks to confirm (no JavaScript), POST releases."""
    reservation = _reservation_or_404(request, pk)
    if request.method == "GET":
        return page(
            request,
            "capacity/release_confirm.html",
            {
                "nav": "reservations",
                "row": reservation_rows([reservation], scope_for(request.user))[0],
                "next": safe_next(request, reverse("reservations")),
            },
        )
    # An operator may say why (an idle booking, a broken job): the reservation keeps it.
    reason = request.POST.get("reason", "") if is_operator(request.user) else ""
    reservation = services.release(
        reservation.pk, scope=scope_for(request.user), reason=reason, by=request.user.get_username()
    )
    if not wants_partial(request):
        return redirect(safe_next(request, reverse("reservations")))
    return page(
        request,
        "capacity/reservations.html",
        {
            "row": reservation_rows([reservation], scope_for(request.user))[0],
            "next": safe_next(request, reverse("reservations")),
        },
        partial="reservation-row",
    )


@require_POST
@login_required
def rebook(request: HttpRequest, pk: int) -> HttpResponse:
    """Book a pending reservation's request at the earliest window that fits; show the new one."""
    reservation = _reservation_or_404(request, pk)
    try:
        done = rebook_earliest(
            reservation, scope=scope_for(request.user), identity=request.user.get_username()
        )
    except CapacityError as err:
        done = Rebooked(None, err.message)
    if done.result is not None:
        return redirect("reservation-detail", pk=done.result.reservation.pk)
    scope = scope_for(request.user)
    context = {
        "nav": "reservations",
        "row": reservation_rows([reservation], scope)[0],
        "asked": asked_text(reservation.request.get("input", {})),
        "conditions": services.redacted_conditions(reservation.conditions, scope),
        "history": condition_history(reservation, scope),
        "rebook_refused": services.redact(done.reason, scope),
    }
    return page(request, "capacity/reservation_detail.html", context, status=409)


def _series_card(reservation, scope: services.Scope) -> dict | None:
    """Return what the page shows of the series the reservation is an occurrence of, if any."""
    card = series_hooks.way("occurrence_card")
    return card(reservation, scope) if card is not None else None
