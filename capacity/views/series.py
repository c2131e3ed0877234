"""Series in the browser (docs/series.md): booked from the booking form, shown on an occurrence's page."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from capacity import services
from capacity.access import scope_for
from capacity.forms import BookForm
from capacity.models import Reservation
from capacity.placement import NOT_FOUND, CapacityError
from config.web import login_required, safe_next

LISTED = 60  # occurrences an occurrence's page lists (a series has at most 200)


def book_series(request: HttpRequest, form: BookForm, scope: services.Scope) -> services.SeriesResult | None:
    """Book the series a valid form asks for, or put the refusal next to its field and return None."""
    data = form.request_data()
    admission = services.admission_context(data.get("tenantId"), request.user.get_username(), "user")
    try:
        return services.reserve_series(data, scope=scope, admission=admission, by=request.user.get_username())
    except services.SeriesNotPlaced as missed:
        form.add_error("all_or_nothing", missed.message)
        for o in missed.occurrences:
            form.add_error(
                "all_or_nothing", f"{o.start:%a %Y-%m-%d %H:%M} UTC: {services.redact(o.reason, scope)}"
            )
    except CapacityError as err:
        form.add_capacity_error(err)
    return None


def occurrence_context(reservation: Reservation, scope: services.Scope) -> dict | None:
    """Return what an occurrence's page shows of its series: the rule, where it stands, the others."""
    series_id = getattr(reservation, "series_id", None)
    if series_id is None:
        return None
    series = services.get_series(series_id, scope=scope)
    occurrences = services.occurrences_of(series)
    place = next((n for n, o in enumerate(occurrences, start=1) if o.reservation_id == reservation.pk), None)
    return {
        "series": series,
        "place": place,
        "count": len(occurrences),
        "occurrences": [
            {**vars(o), "reason": services.redact(o.reason, scope)} for o in occurrences[:LISTED]
        ],
        "more": max(len(occurrences) - LISTED, 0),
        "live": sum(o.status not in ("released", "preempted") for o in occurrences),
    }


@require_POST
@login_required
def series_release(request: HttpRequest, pk: int) -> HttpResponse:
    """Release every occurrence of the series not yet ended, then go back where the user was."""
    try:
        services.release_series(pk, scope=scope_for(request.user))
    except CapacityError as err:
        if err.code == NOT_FOUND:
            raise Http404(err.message) from None
        raise
    return redirect(safe_next(request, reverse("reservations")))
