"""Series in the browser (docs/series.md): booked from capacity's booking form, shown on an occurrence's
page (capacity asks through capacity.series_hooks), released here."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from capacity.port import NOT_FOUND, CapacityError, Reservation, Scope, admission_context, redact, scope_for
from config.web import login_required, safe_next

from .book import SeriesNotPlaced, reserve_series
from .occurrences import get_series, occurrences_of
from .release import release_series

LISTED = 60  # occurrences an occurrence's page lists (a series has at most 200)
CARD = "series/series_card.html"  # what capacity's pages include with the card's context


def book_series(request: HttpRequest, form: Any, scope: Scope) -> tuple[Reservation, dict | None] | None:
    """Book the series a valid booking form asks for: its first occurrence and series card.

    A refusal goes next to its field (the form's own `add_capacity_error`), and None is returned.
    """
    data = form.request_data()
    admission = admission_context(data.get("tenantId"), request.user.get_username(), "user")
    try:
        done = reserve_series(data, scope=scope, admission=admission, by=request.user.get_username())
    except SeriesNotPlaced as missed:
        form.add_error("all_or_nothing", missed.message)
        for o in missed.occurrences:
            form.add_error("all_or_nothing", f"{o.start:%a %Y-%m-%d %H:%M} UTC: {redact(o.reason, scope)}")
        return None
    except CapacityError as err:
        form.add_capacity_error(err)
        return None
    # A series answers with its first occurrence, whose page lists the others.
    first = Reservation.objects.get(pk=done.occurrences[0].reservation_id)
    return first, occurrence_context(first, scope)


def occurrence_context(reservation: Reservation, scope: Scope) -> dict | None:
    """Return what an occurrence's page shows of its series: the rule, where it stands, the others."""
    series_id = getattr(reservation, "series_id", None)
    if series_id is None:
        return None
    series = get_series(series_id, scope=scope)
    occurrences = occurrences_of(series)
    place = next((n for n, o in enumerate(occurrences, start=1) if o.reservation_id == reservation.pk), None)
    return {
        "template": CARD,
        "series": series,
        "place": place,
        "count": len(occurrences),
        "occurrences": [{**vars(o), "reason": redact(o.reason, scope)} for o in occurrences[:LISTED]],
        "more": max(len(occurrences) - LISTED, 0),
        "live": sum(o.status not in ("released", "preempted") for o in occurrences),
    }


@require_POST
@login_required
def series_release(request: HttpRequest, pk: int) -> HttpResponse:
    """Release every occurrence of the series not yet ended, then go back where the user was."""
    try:
        release_series(pk, scope=scope_for(request.user))
    except CapacityError as err:
        if err.code == NOT_FOUND:
            raise Http404(err.message) from None
        raise
    return redirect(safe_next(request, reverse("reservations")))
