"""The reservations list as CSV: what the page lists, filters and all, with each one's GPU use."""

from __future__ import annotations

import csv
import io

from django.http import HttpResponse

from capacity import services

CSV_MAX_ROWS = 10_000  # one download at most; narrow the filters for more
_CHUNK = 1_000
COLUMNS = (
    "id",
    "tenantId",
    "poolId",
    "status",
    "start",
    "end",
    "releasedAt",
    "nodes",
    "atoms",
    "gpuPercentMean",
    "gpuPercentP95",
    "minutesWithoutProcess",
    "samples",
)


def reservations_csv(queryset) -> HttpResponse:
    """Answer the listed reservations, newest first, as CSV (at most CSV_MAX_ROWS)."""
    reservations = list(queryset.select_related("tenant", "pool")[:CSV_MAX_ROWS])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for at in range(0, len(reservations), _CHUNK):
        chunk = reservations[at : at + _CHUNK]
        allocations = services.allocations_for(chunk)
        usage = services.usage_for([r.pk for r in chunk])
        for r in chunk:
            held = [a for a in allocations.get(r.pk, []) if a["releasedAt"] is None or r.status != "placed"]
            use = usage.get(r.pk) or {}
            writer.writerow(
                [
                    r.pk,
                    r.tenant.slug,
                    r.pool.slug,
                    r.status,
                    r.starts_at.isoformat(),
                    r.ends_at.isoformat(),
                    r.released_at.isoformat() if r.released_at else "",
                    " ".join(dict.fromkeys(a["nodeId"] for a in held)),
                    " ".join(uuid for a in held for uuid in a["atoms"]),
                    *(use.get(k, "") for k in COLUMNS[-4:]),
                ]
            )
    answer = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    answer["Content-Disposition"] = 'attachment; filename="reservations.csv"'
    return answer
