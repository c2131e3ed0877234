"""The one-line pending reason that summarizes why nothing fit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from .eligibility import ELIGIBLE_FILTER
from .types import Rejection

EMPTY_POOL_REASON: Final = "the pool has no nodes"
ARCHIVED_REASON: Final = "the pool is archived"
MAX_GROUPS: Final = 5
TIMES: Final = "\u00d7"


def nodes_phrase(count: int) -> str:
    """Return "1 node" or "<count> nodes"."""
    return f"{count} node" if count == 1 else f"{count} nodes"


def rejection_label(rejection: Rejection) -> str:
    """Return how a rejection reads in a summary: the reason alone for eligibility, else filter: reason."""
    if rejection.filter == ELIGIBLE_FILTER:
        return rejection.reason
    return f"{rejection.filter}: {rejection.reason}"


def rejection_groups(
    rejections: Iterable[Rejection], limit: int | None = MAX_GROUPS
) -> list[tuple[int, str]]:
    """Return (count, label) groups, most common first, ties in first-seen order, at most limit (None: all)."""
    counts: dict[str, int] = {}
    for rejection in rejections:
        label = rejection_label(rejection)
        counts[label] = counts.get(label, 0) + 1
    # sorted() is stable, so equal counts keep the first-seen order of the dict.
    ordered = sorted(counts.items(), key=lambda item: -item[1])
    return [(count, label) for label, count in ordered[:limit]]


def rest_groups(rejections: Iterable[Rejection]) -> list[tuple[int, str]]:
    """Return the groups a summary leaves out after its first MAX_GROUPS, in the same order."""
    return rejection_groups(rejections, limit=None)[MAX_GROUPS:]


def format_groups(groups: Iterable[tuple[int, str]]) -> str:
    """Return groups as "2 \u00d7 fits: 1 of 4 gpu free; 1 \u00d7 cordoned" (U+00D7 MULTIPLICATION SIGN)."""
    return "; ".join(f"{count} {TIMES} {label}" for count, label in groups)


def summarize(rejections: Iterable[Rejection], node_count: int) -> str:
    """Return the pending reason for rejections among node_count nodes.

    For example "no node fits (3 nodes): 2 \u00d7 fits: 1 of 4 gpu free; 1 \u00d7 cordoned".
    """
    if node_count == 0:
        return EMPTY_POOL_REASON
    groups = rejection_groups(rejections)
    head = f"no node fits ({nodes_phrase(node_count)})"
    return f"{head}: {format_groups(groups)}" if groups else head
