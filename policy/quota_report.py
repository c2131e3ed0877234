"""The quota report: a tenant's peak use against each limit over a window (the API, `quota`, the pages' cards).

Read by the booking path's own quota reads (capacity.placers.quota.report), over a window checked
as a booking's is.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from capacity.port import (
    EVERYONE,
    INVALID_INPUT,
    MAX_DURATION,
    NOT_FOUND,
    CapacityError,
    Scope,
    Use,
    Window,
    epoch_ms,
    report,
)
from inventory.models import Tenant

# A quota report covers a week from now unless the caller names a window.
QUOTA_REPORT_WINDOW = timedelta(days=7)


def quota_report(
    tenant_slug: str,
    *,
    scope: Scope = EVERYONE,
    start: object = None,
    end: object = None,
    now: datetime | None = None,
) -> tuple[Tenant, int, int, list[Use]]:
    """Return the tenant, the window (epoch ms) and its peak use against each limit in that window.

    The window defaults to a week from now; `start` and `end` are epoch milliseconds or ISO 8601
    times, and the window obeys the 366-day limit bookings do.
    """
    now = now or timezone.now()
    tenant = Tenant.objects.filter(slug=tenant_slug).first() if isinstance(tenant_slug, str) else None
    if tenant is None or not scope.allows(tenant.slug):
        raise CapacityError(NOT_FOUND, f"no tenant {tenant_slug}")
    first = epoch_ms(start, "start") if start is not None else int(now.timestamp() * 1000)
    last = (
        epoch_ms(end, "end") if end is not None else first + int(QUOTA_REPORT_WINDOW.total_seconds() * 1000)
    )
    if last <= first:
        raise CapacityError(INVALID_INPUT, "end must be after start")
    if last - first > MAX_DURATION.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "the window must be at most 366d")
    return tenant, first, last, report(tenant.pk, Window(first, last), now)
