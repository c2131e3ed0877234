"""Plan a request: the pure planner bound to the settings, the shortlist first (on reads.py's reads).

The planner is built once per request (it reads the nodes whose image cache holds the request's
image) and handed to everything that plans the request again: a replan after a lost race, the
preemption search, hints and the never-fits check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

from django.db import connection

from capacity.placement import (
    PickMemo,
    PlacementRequest,
    Plan,
    count_scores,
    max_link_dependent_score,
    plan_placement,
    weight_for,
)

from .index import PoolIndex, Reach, Used, shortlist_order, views_for
from .loader import NodeIndex, PoolRow
from .types import PlacerConfig

# Nodes a shortlist plans first: twice the guarded top N, at least this many. The placer's reads
# give every node's counts, so widening (when a node outside could still rank) is cheap and exact.
SHORTLIST_SIZE = 8
SCORE_EPSILON = 1e-9


def uses_shortlist(request: PlacementRequest, config: PlacerConfig) -> bool:
    """Return whether SQL can rank this request's candidates: no selector, no gang, no plugin scorer."""
    return (
        not any(d.selector for d in request.devices)
        and request.gang is None
        and not any(p.scorers for p in config.plugins)
    )


def image_cached_nodes(pool: PoolRow, image_id: str | None) -> frozenset[str]:
    """Return the names of the pool's nodes whose cache holds `image_id` ready."""
    if image_id is None:
        return frozenset()
    with connection.cursor() as cur:
        cur.execute(
            """SELECT n.name FROM inventory_nodeimagecache c JOIN inventory_node n ON n.id = c.node_id
                WHERE n.pool_id = %s AND c.image = %s AND c.state = 'ready'""",
            [pool.pk, image_id],
        )
        return frozenset(row[0] for row in cur.fetchall())


BoundPlan = Callable[[NodeIndex, PickMemo | None], Plan]


@dataclass(frozen=True)
class Planner:
    """The pure planner bound to a pool and the settings, built once per request.

    Building it reads which nodes hold the request's image; binding it to a request (the request
    itself, a replan without a node, a hint's smaller request) reads nothing.
    """

    pool: PoolRow
    config: PlacerConfig
    image_cached: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, request: PlacementRequest, pool: PoolRow, config: PlacerConfig, given: Planner | None = None
    ) -> Planner:
        """Return `given` (with `config`, when the caller changed it), else a planner built now."""
        if given is None:
            return cls(pool, config, image_cached_nodes(pool, request.image_id))
        return given if given.config is config else dataclasses.replace(given, config=config)

    def bind(self, request: PlacementRequest) -> BoundPlan:
        """Return plan(index, memo) for this request."""
        pool, config, cached = self.pool, self.config, self.image_cached

        def plan(index: NodeIndex, memo: PickMemo | None = None) -> Plan:
            return plan_placement(
                request,
                index.views,
                pool.view,
                plugins=config.plugins,
                weights=config.weights,
                top_n=config.top_n,
                random=config.random,
                image_cached=cached,
                memo=memo,
            )

        return plan


def planner(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, built: Planner | None = None
) -> BoundPlan:
    """Return the pure planner for this request, bound to the settings: plan(index, memo)."""
    return Planner.of(request, pool, config, built).bind(request)


def plan_shortlist(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    static: PoolIndex,
    taken: set[int],
    short: set[str],
    used: Used,
    plan: BoundPlan,
    size: int | None = None,
    protect: int = 0,
) -> tuple[Plan, NodeIndex] | None:
    """Plan the best `size` nodes by their reach, widening while a node outside could reach the top N
    (or the best `protect` nodes, when more).

    Return None when nothing fits: the pending reason needs every node of the pool. `used` is each
    node's most-claimed scalars in the window.
    """
    ordered = shortlist_order(request, pool, static, taken, short, reach(request, config, static))
    guarded = max(config.top_n, protect)
    size = size or shortlist_size(guarded)
    scored = list(islice(ordered, size + 1))
    while scored:
        keep = scored[:size]
        index = views_for(static, [name for _, name in keep], taken, used)
        result = plan(index, static.memo())
        outside = scored[size:]
        if result.fits and not _outside_could_rank(result, outside, guarded):
            return result, index
        if not outside:
            return None
        size *= 2
        scored.extend(islice(ordered, size + 1 - len(scored)))
    return None


def shortlist_size(guarded: int) -> int:
    """Return how many nodes a shortlist that must get the best `guarded` right plans first."""
    return max(SHORTLIST_SIZE, 2 * guarded)


def reach(request: PlacementRequest, config: PlacerConfig, index: PoolIndex) -> Reach:
    """Return a node's best possible total: its exact count-only score plus the most its links allow."""
    full = max_link_dependent_score(request, config.weights)
    single = sum(d.count for d in request.devices) <= 1  # one atom: the topology score is 1 everywhere
    topology = max(0.0, weight_for("topology", config.weights))
    rest = full - topology  # image-cached, when the request has an image
    ceiling = index.topology_ceiling
    memo: dict[tuple[int, int], float] = {}  # most nodes share a handful of (free, total) counts
    # count_scores sums the requested classes, so one of them can carry the sums.
    some_class = request.devices[0].device_class if request.devices else ""

    def value(free: int, total: int, name: str) -> float:
        counts = memo.get((free, total))
        if counts is None:
            counts = memo[(free, total)] = round(
                count_scores(request, {some_class: free}, {some_class: total}, config.weights), 12
            )
        bound = full if single else topology * ceiling[name] + rest
        return round(counts + bound, 12)

    return value


def _outside_could_rank(plan: Plan, outside: Sequence[tuple[float, str]], guarded: int) -> bool:
    """Return whether a node left out of the shortlist could still reach the plan's best `guarded`.

    `outside` holds each node's best possible total (count-only score plus its link bound), best first.
    """
    if not outside:
        return False
    if len(plan.ranked) < guarded:
        return True
    nth = plan.ranked[guarded - 1]
    reach, best_name = outside[0]
    return reach > nth.score + SCORE_EPSILON or (
        abs(reach - nth.score) <= SCORE_EPSILON and best_name < nth.node_id
    )
