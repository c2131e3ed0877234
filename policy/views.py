"""The approval queue (docs/policy.md, Approvals): operators approve or deny large bookings here;
an owner reclaims its lent GPUs from its reservation's page (the button, policy.reclaim) and keeps
it when idle, or not (policy.keep_when_idle)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from capacity.port import NOT_FOUND, CapacityError, get, may_approve, reservation_detail, scope_for
from config.web import login_required, page

from .approvals import approval_queue, approve, deny
from .keep_when_idle import set_keep_when_idle
from .reclaim import reclaim as reclaim_lent


@require_GET
@login_required
def approvals(request: HttpRequest) -> HttpResponse:
    """List the bookings awaiting approval, soonest hold first, each with Approve and Deny."""
    return _queue(request)


def _queue(request: HttpRequest, errors: dict[int, str] | None = None, status: int = 200) -> HttpResponse:
    if not may_approve(request.user):
        raise PermissionDenied("only operators approve bookings")
    rows = approval_queue()
    return page(
        request,
        "capacity/approvals.html",
        {"nav": "approvals", "rows": rows, "errors": errors or {}},
        status=status,
    )


@require_POST
@login_required
def decide(request: HttpRequest, pk: int, decision: str) -> HttpResponse:
    """Approve or deny one booking (the API's approve and deny); an error is shown on its row."""
    operator = may_approve(request.user)
    if not operator:
        raise PermissionDenied("only operators approve bookings")
    by = request.user.get_username()
    try:
        if decision == "approve":
            approve(pk, by=by, operator=operator)
        else:
            deny(pk, request.POST.get("reason", ""), by=by, operator=operator)
    except CapacityError as err:
        return _queue(request, {pk: err.message}, status=409 if err.code == "CONFLICT" else 400)
    return redirect(reverse("approvals"))


@require_POST
@login_required
def reclaim(request: HttpRequest, pk: int) -> HttpResponse:
    """Take the booking's lent GPUs back from the spot work running on them; the API's reclaim."""
    reservation = _reservation_or_404(request, pk)
    reclaim_lent(reservation.pk, scope=scope_for(request.user))
    return redirect(reverse("reservation-detail", args=[pk]))


@require_POST
@login_required
def keep_when_idle(request: HttpRequest, pk: int) -> HttpResponse:
    """Keep the booking when idle (`keep=1`) or hand it back to its pool's idle release; the API's PATCH."""
    reservation = _reservation_or_404(request, pk)
    try:
        set_keep_when_idle(reservation.pk, request.POST.get("keep") == "1", scope=scope_for(request.user))
    except CapacityError as err:
        return reservation_detail(request, pk, keep_error=err.message, status=400)
    return redirect(reverse("reservation-detail", args=[pk]))


def _reservation_or_404(request: HttpRequest, pk: int) -> Any:
    """Return the reservation the user may read; 404 for one it may not, as for none."""
    try:
        return get(pk, scope=scope_for(request.user))
    except CapacityError as err:
        if err.code == NOT_FOUND:
            raise Http404(err.message) from None
        raise
