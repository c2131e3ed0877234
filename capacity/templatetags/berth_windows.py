"""Template filters for maintenance windows on a reservation's page."""

from __future__ import annotations

from datetime import datetime

from django import template

from capacity.services.maintenance_notice import notice_of

register = template.Library()


@register.filter
def maintenance_notice(reservation) -> dict | None:
    """Return the window that will take a placed reservation's GPUs (window, start, end, reason, nodes), else None."""
    found = notice_of(reservation)
    if found is None:
        return None
    return {
        "window": found["window"],
        "start": datetime.fromisoformat(found["at"]),
        "end": datetime.fromisoformat(found["end"]),
        "reason": found.get("windowReason", ""),
        "nodes": found.get("nodes", []),
    }
