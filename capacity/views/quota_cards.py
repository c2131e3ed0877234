"""The quota cards the booking and reservations pages draw (capacity/quota_bars.html), from the app that reads them.

The policy app, which administers quotas, registers its readers when ready (policy.quota_cards);
the pages never import it. With none registered they draw no cards. A card has `tenant`, `start`,
`end`, `lines` (each `resource`, `limit`, `now`, `peak`, `default`, `percent`, `now_percent`,
`tight`), `default` and `limited`: what the partial reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_READERS: dict[str, Callable[[Any, Any], list]] = {}


def register_quota_cards(booking: Callable[[Any, Any], list], listed: Callable[[Any, Any], list]) -> None:
    """Set the readers: `booking(form, scope)` for the booking form, `listed(tenants, scope)` for a list."""
    _READERS.update(booking=booking, listed=listed)


def booking_quota(form, scope) -> list:
    """Return the cards of the tenant the booking form is for, over the window it asks for."""
    reader = _READERS.get("booking")
    return reader(form, scope) if reader else []


def quota_cards(tenants, scope) -> list:
    """Return the cards of these tenants over a week from now."""
    reader = _READERS.get("listed")
    return reader(tenants, scope) if reader else []
