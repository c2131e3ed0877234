"""The fair queue of a pool with shares: the order its pending work is tried in, and its words.

Pending work is tried lowest `fairShare` first (policy.fairshare), so the tenant that
used least of its share lately goes first. A tenant without a figure (no guarantee, or no share
row) comes after every tenant with one. Equal figures (two tenants with the same figure, or both
without one) and a tenant's own requests go oldest request first: the key of one reservation is
(no figure, figure, created, pk), so the order needs no grouping and reads the same in SQL
(`ORDER BY share NULLS LAST, created_at, id`: policy.fair_queue). Pure: no clock, no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Waiting:
    """One pending reservation as the queue sees it: its key, tenant and when it was asked."""

    pk: int
    tenant: Hashable
    created: Any  # comparable: a datetime, or epoch seconds


@dataclass(frozen=True)
class Place:
    """Where a pending reservation stands: `position` (1-based) of `of`, and its tenant's figure."""

    position: int
    of: int
    fair_share: float | None


def queue_key(fair_share: float | None, created: Any, pk: int) -> tuple[bool, float, Any, int]:
    """Return the sort key of one reservation: figures ascending, none last, then oldest first."""
    return (fair_share is None, 0.0 if fair_share is None else fair_share, created, pk)


def fair_order(waiting: Iterable[Waiting], shares: Mapping[Hashable, float | None]) -> list[Waiting]:
    """Return the pending work of one pool in the order it is tried; `shares` maps tenant -> figure.

    A tenant missing from `shares` has no figure (None).
    """
    return sorted(waiting, key=lambda w: queue_key(shares.get(w.tenant), w.created, w.pk))


def places(waiting: Iterable[Waiting], shares: Mapping[Hashable, float | None]) -> dict[int, Place]:
    """Return pk -> its Place in the pool's fair order, in one sort."""
    ordered = fair_order(waiting, shares)
    return {
        w.pk: Place(position, len(ordered), shares.get(w.tenant))
        for position, w in enumerate(ordered, start=1)
    }


def ordinal(n: int) -> str:
    """Return 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 102nd."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def lately(half_life_hours: int) -> str:
    """Return the span a figure under this half-life speaks of: "this week" for the default 168 h."""
    if half_life_hours == 7 * 24:
        return "this week"
    if half_life_hours == 24:
        return "today"
    if half_life_hours % 24 == 0:
        return f"these {half_life_hours // 24} days"
    return f"these {half_life_hours} hours"


def place_words(place: Place, pool: str, half_life_hours: int, who: str = "your team") -> str:
    """Return "3rd of 11 in h100-prod; your team used 1.3× its share this week".

    Without a figure: "3rd of 11 in h100-prod; your team has no guaranteed share here". Names no
    other tenant: a tenant reads it of its own reservation (operators may pass its name as `who`).
    """
    where = f"{ordinal(place.position)} of {place.of} in {pool}"
    if place.fair_share is None:
        return f"{where}; {who} has no guaranteed share here"
    return f"{where}; {who} used {place.fair_share:.1f}× its share {lately(half_life_hours)}"
