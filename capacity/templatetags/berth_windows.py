"""Template filters for maintenance windows on a reservation's page: its MaintenanceScheduled
condition, which the maintenance app keeps (maintenance/notice.py), read as the API reads it."""

from __future__ import annotations

from datetime import datetime

from django import template

from capacity.models.reservations import MAINTENANCE_SCHEDULED

register = template.Library()


@register.filter
def maintenance_notice(reservation) -> dict | None:
    """Return the window that will take a placed reservation's GPUs (window, start, end, reason, nodes), else None."""
    if getattr(reservation, "status", None) != "placed":
        return None
    found = reservation.condition(MAINTENANCE_SCHEDULED)
    if not found or found.get("status") != "True":
        return None
    return {
        "window": found["window"],
        "start": datetime.fromisoformat(found["at"]),
        "end": datetime.fromisoformat(found["end"]),
        "reason": found.get("windowReason", ""),
        "nodes": found.get("nodes", []),
    }
