"""A series as its answers word it: the API's, and `reserve --repeat --json`'s."""

from __future__ import annotations

from capacity.port import EVERYONE, Scope, redact


def series_data(series, occurrences, scope: Scope = EVERYONE) -> dict:
    """Return a series (tenant and pool loaded) with its occurrences as the caller reads them."""
    return {
        "id": series.pk,
        "tenantId": series.tenant.slug,
        "poolId": series.pool.slug,
        "rule": series.rule,
        "repeat": series.repeat,
        "start": series.starts_at,
        "end": series.ends_at,
        "allOrNothing": series.all_or_nothing,
        "createdBy": series.created_by,
        "createdAt": series.created_at,
        "request": series.request,
        "occurrences": occurrence_items(occurrences, scope),
    }


def occurrence_items(occurrences, scope: Scope = EVERYONE) -> list[dict]:
    """Return occurrences as the API lists them: a pending one with its reason, redacted for the caller."""
    return [
        {
            "reservationId": o.reservation_id,
            "start": o.start.isoformat().replace("+00:00", "Z"),
            "status": o.status,
            **({"reason": redact(o.reason, scope)} if o.reason else {}),
        }
        for o in occurrences
    ]
