"""The built-in scorers, their weights, and the count-only part of a score the SQL shortlist ranks by."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from .pick import UNKNOWN_RANK, WORST_KNOWN_RANK
from .types import PlacementRequest

BINPACK: Final = "binpack"
TOPOLOGY: Final = "topology"
FRAGMENTATION: Final = "fragmentation"
SPREAD: Final = "spread"
IMAGE_CACHED: Final = "image-cached"

DEFAULT_WEIGHTS: Final[Mapping[str, float]] = {
    BINPACK: 1.0,
    TOPOLOGY: 1.0,
    FRAGMENTATION: 0.25,
    SPREAD: 0.0,
    IMAGE_CACHED: 0.5,
}
BUILTIN_SCORERS: Final = tuple(DEFAULT_WEIGHTS)
PLUGIN_DEFAULT_WEIGHT: Final = 1.0
# The scorers whose value depends only on free and total atom counts.
COUNT_SCORERS: Final = (BINPACK, FRAGMENTATION, SPREAD)


def clamp_score(value: object) -> float:
    """Return value clamped to 0..1; anything that is not a finite number counts as 0."""
    if not isinstance(value, int | float):
        return 0.0
    number = float(value)
    if not math.isfinite(number):
        return 0.0
    return min(1.0, max(0.0, number))


def weight_for(scorer_id: str, weights: Mapping[str, float] | None, own: float | None = None) -> float:
    """Return a scorer's weight: weights[id] (settings), then the scorer's own, then its default."""
    if weights is not None and scorer_id in weights:
        return float(weights[scorer_id])
    if own is not None:
        return float(own)
    return DEFAULT_WEIGHTS.get(scorer_id, PLUGIN_DEFAULT_WEIGHT)


def binpack_score(free_after: int, total: int) -> float:
    """Return 1 - free_after / total, clamped to 0..1; 0 for a node with none of the classes."""
    if total <= 0:
        return 0.0
    score = 1.0 - free_after / total
    return 0.0 if score < 0.0 else 1.0 if score > 1.0 else score


def fragmentation_score(free_after: int) -> float:
    """Return 1 when nothing is left free, 0.5 when what is left is a power of two, else 0."""
    if free_after <= 0:
        return 1.0
    return 0.5 if free_after & (free_after - 1) == 0 else 0.0


def topology_score(picked: int, worst: int) -> float:
    """Return 1 for at most one atom, else 1 - worst / 5 by link rank, 0.5 when a link is unknown."""
    if picked <= 1:
        return 1.0
    if worst >= UNKNOWN_RANK:
        return 0.5
    return 1.0 - worst / WORST_KNOWN_RANK


def requested_classes(request: PlacementRequest) -> frozenset[str]:
    """Return the device classes a request asks for."""
    return frozenset(d.device_class for d in request.devices)


def count_scores(
    request: PlacementRequest,
    free_by_class: Mapping[str, int],
    total_by_class: Mapping[str, int],
    weights: Mapping[str, float] | None = None,
) -> float:
    """Return the weighted sum of binpack, fragmentation and spread for a node with these counts.

    free_by_class counts the node's free, healthy, bookable atoms per class; total_by_class its healthy,
    bookable devices per class. This is exactly what plan_placement adds for those scorers, so the SQL
    shortlist can rank by it; the rest of a node's total is at most max_link_dependent_score(). Plugin
    scorers are not included: any plugin scorer turns the shortlist off.
    """
    classes = requested_classes(request)
    free = sum(free_by_class.get(c, 0) for c in classes)
    total = sum(total_by_class.get(c, 0) for c in classes)
    free_after = free - sum(d.count for d in request.devices)
    binpack = binpack_score(free_after, total)
    return (
        weight_for(BINPACK, weights) * binpack
        + weight_for(FRAGMENTATION, weights) * fragmentation_score(free_after)
        + weight_for(SPREAD, weights) * (1.0 - binpack)
    )


def max_link_dependent_score(request: PlacementRequest, weights: Mapping[str, float] | None = None) -> float:
    """Return the most the scorers that need links or outside state (topology, image-cached) can add.

    A node's total is count_scores() plus a part between 0 and this bound, so a node outside the
    shortlist can reach the top N only if its count_scores() plus this bound reaches the N-th total.
    """
    bound = max(0.0, weight_for(TOPOLOGY, weights))
    if request.image_id is not None:
        bound += max(0.0, weight_for(IMAGE_CACHED, weights))
    return bound
