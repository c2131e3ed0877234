"""Write one audit row for a change no other history records, in the change's transaction."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from trail.context import actor, request_id
from trail.models import ACTOR_MAX, AuditRecord


def record(
    action: str, obj: str, *, before: Any = None, after: Any = None, reason: str = "", by: str = ""
) -> None:
    """Record `action` on `obj` (e.g. "quota.set", "quota:acme/gpu") by `by`, else whoever acts now."""
    AuditRecord.objects.create(
        at=timezone.now(),
        actor=(by or actor())[:ACTOR_MAX],
        action=action,
        object=obj,
        before=before,
        after=after,
        reason=reason[:300],
        request_id=request_id(),
    )
