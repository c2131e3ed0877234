"""A tenant's quota as the booking and reservations pages draw it: held now and the peak, per limit.

The pages are capacity's (capacity.views.booking, capacity.views.reservations, their partial
capacity/quota_bars.html); they ask for the cards through capacity.views.quota_cards, where
policy/apps.py registers these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from capacity.port import DEFAULT_RESOURCE, CapacityError, parse_duration

from .quota_report import QUOTA_REPORT_WINDOW, quota_report


@dataclass
class QuotaLine:
    """One resource of a tenant's quota: its limit, what is held now and the most held at once."""

    resource: str
    limit: int | None
    now: int
    peak: int
    default: bool = False  # the limit is the tenant's default row

    def _share(self, value: int) -> float:
        if not self.limit:
            return 100.0 if value else 0.0
        return min(100.0, round(100 * value / self.limit, 1))

    @property
    def percent(self) -> float:
        """Return the window's peak as a share of the limit, for the bar (0 to 100)."""
        return self._share(self.peak)

    @property
    def now_percent(self) -> float:
        """Return what is held now as a share of the limit (0 to 100)."""
        return self._share(self.now)

    @property
    def tight(self) -> bool:
        """Return whether the peak leaves less than a tenth of the limit."""
        return self.limit is not None and self.peak >= 0.9 * self.limit


@dataclass
class QuotaCard:
    """A tenant's quota over one window, resources in name order and the default limit apart."""

    tenant: str
    start: datetime
    end: datetime
    lines: list[QuotaLine]
    default: int | None  # the limit of every resource without a row of its own; None: refused

    @property
    def limited(self) -> bool:
        """Return whether the tenant has any quota row at all."""
        return bool(self.lines) or self.default is not None


def quota_cards(
    tenants, scope, start: datetime | None = None, end: datetime | None = None
) -> list[QuotaCard]:
    """Return, per tenant, its quota over a window (a week from now by default): held now and the peak."""
    now = timezone.now()
    start = start or now
    end = end or start + QUOTA_REPORT_WINDOW
    cards = []
    for tenant in tenants:
        slug = getattr(tenant, "slug", tenant)
        found, _start, _end, uses = quota_report(slug, scope=scope, start=_ms(start), end=_ms(end), now=now)
        lines = [
            QuotaLine(u.resource, u.limit, u.now, u.peak, u.default)
            for u in uses
            if u.resource != DEFAULT_RESOURCE
        ]
        default = next((u.limit for u in uses if u.resource == DEFAULT_RESOURCE), None)
        cards.append(QuotaCard(found.slug, start, end, lines, default))
    return cards


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def form_window(form) -> tuple[datetime, datetime]:
    """Return the window a booking form asks for, or its default duration from now when it is not valid."""
    now = timezone.now()
    data = getattr(form, "cleaned_data", None) if form.is_bound and not form.errors else None
    if data:
        start = data.get("start") or now
        if data.get("end"):
            return start, data["end"]
        duration = (data.get("duration") or "").strip()
    else:
        start, duration = now, str(form["duration"].value() or "")
    try:
        return start, start + parse_duration(duration or "1d")
    except CapacityError:
        return start, start + timedelta(days=1)


def booking_quota(form, scope) -> list[QuotaCard]:
    """Return the quota of the tenant the booking form is for, over the window it asks for.

    Nothing while no tenant is chosen (an operator's form), or for a tenant the caller may not act for.
    """
    tenant = form["tenant"].value()
    if not tenant or not isinstance(tenant, str) or not scope.allows(tenant):
        return []
    start, end = form_window(form)
    if end <= start:
        return []
    try:
        return quota_cards([tenant], scope, start, end)
    except CapacityError:
        return []
