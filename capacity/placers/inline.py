"""The inline placer: plan on plain reads, lock the pool, commit in a savepoint, replan on a lost race."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice

from django.db import connection

from capacity.placement import (
    ARCHIVED_REASON,
    PickMemo,
    PlacementRequest,
    Plan,
    SchedulerPlugin,
    count_scores,
    max_link_dependent_score,
    plan_placement,
    weight_for,
)

from .commit import ArchivedMeanwhile, Committed, LostRace, Owner, commit_member
from .index import PoolIndex, Reach, Used, pool_index, shortlist_order, views_for
from .loader import NodeIndex, PoolRow, load_node_views, load_pool
from .reads import Reads, plan_reads

# Nodes a shortlist plans first: twice the guarded top N, at least this many. The placer's reads
# give every node's counts, so widening (when a node outside could still rank) is cheap and exact.
SHORTLIST_SIZE = 8
SCORE_EPSILON = 1e-9
INLINE = "inline"
POOL_LEASE = "pool-lease"
PLACERS = (INLINE, POOL_LEASE)


@dataclass(frozen=True)
class PlacerConfig:
    """What placement reads from settings: the placer, plugins, weights, top N, attempts, batch size
    and linger, and the random source."""

    plugins: tuple[SchedulerPlugin, ...] = ()
    weights: Mapping[str, float] | None = None
    top_n: int = 5
    max_attempts: int = 3
    random: Callable[[], float] | None = None
    placer: str = INLINE
    max_batch: int = 64
    linger: float = 0.0  # seconds run_placer waits after a batch that was not full


@dataclass
class Outcome:
    """A placement's answer: placed with its allocations, or pending with a reason."""

    status: str  # "placed" | "pending" | "queued" (the pool-lease placer took it)
    committed: list[Committed] = field(default_factory=list)
    reason: str = ""
    plan: Plan | None = None
    lost: list[str] = field(default_factory=list)
    preempted: tuple[int, ...] = ()  # spot reservations this placement took back


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


Planner = Callable[[NodeIndex, PickMemo | None], Plan]


def planner(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> Planner:
    """Return the pure planner for this request, bound to the settings: plan(index, memo)."""
    cached = image_cached_nodes(pool, request.image_id)

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


def plan_request(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    *,
    shortlist: bool | None = None,
    protect: int = 0,
    reads: Reads | None = None,
) -> tuple[Plan, NodeIndex]:
    """Plan on plain reads: the shortlist when it gives the same top N, else every node of the pool.

    `protect` widens what the shortlist must get right to the best `protect` nodes when that is
    more than top N (a preview shows its first ten candidates). `reads`, sent ahead by the caller,
    are used when they are this plan's (else dropped and read again).
    """
    plan = planner(request, pool, config)

    if shortlist is None:
        shortlist = uses_shortlist(request, config)
    if shortlist and not pool.view.archived:
        static = pool_index(pool)
        if reads is not None and reads.answers(static, request.during, request.resources):
            taken, short, used = reads.take()
        else:
            if reads is not None:
                reads.close()
            taken, short, used = plan_reads(static, request.during, request.resources)
        found = plan_shortlist(request, pool, config, static, taken, short, used, plan, protect=protect)
        if found is not None:
            return found
        # Nothing fits: the pending reason needs every node, planned from the same reads.
        index = views_for(static, [v.id for v in static.nodes.views], taken, used)
        return plan(index, static.memo()), index
    if reads is not None:
        reads.close()
    index = load_node_views(pool.pk, request.during)
    return plan(index), index


def plan_shortlist(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    static: PoolIndex,
    taken: set[int],
    short: set[str],
    used: Used,
    plan: Planner,
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


def place(
    request: PlacementRequest,
    pool_slug: str,
    owner: Owner,
    config: PlacerConfig,
    pool: PoolRow | None = None,
    now: datetime | None = None,
    *,
    holds_pool: bool = False,
    reads: Reads | None = None,
) -> Outcome:
    """Place `request` inside the caller's transaction; lost races replan up to max_attempts times.

    `pool` is the pool as the caller already read it (unlocked), to save reading it again. When
    placed, the owning reservation is marked placed as of `now` in the same statement. A regular
    request that fits only by taking spot work back preempts it (capacity.placers.preempt);
    `holds_pool` says the caller already locked the pool, so victims held elsewhere are skipped.
    `reads` are the window's reads the caller sent ahead (send_reads), for the first plan.
    """
    pool = pool or load_pool(pool_slug)
    if pool is None or pool.view.archived:
        if reads is not None:
            reads.close()
        return Outcome("pending", reason=ARCHIVED_REASON)
    lost: list[str] = []
    for attempt in range(1, config.max_attempts + 1):
        plan, index = plan_request(request, pool, config, reads=reads)
        reads = None  # a replan after a lost race reads afresh
        savepoint = f"capacity_place_{attempt}"
        preemption = None
        if not plan.fits:
            # Imported here: preempt builds on this module's planner.
            from .preempt import find_preemption, take_back, with_preempted

            stamp = now or datetime.now(UTC)
            preemption = find_preemption(request, pool, planner(request, pool, config))
            if preemption is None:
                return Outcome("pending", reason=plan.pending_reason(), plan=plan, lost=lost)
            plan, index = with_preempted(plan, preemption), preemption.index
            with connection.cursor() as cur:
                cur.execute(f"SAVEPOINT {savepoint}")
            if not take_back(preemption.victims, preemption.at, owner, stamp, wait=not holds_pool):
                rollback_to(savepoint)
                node = preemption.members[0].node_id
                lost.append(f"spot work on {node} is being changed")
                request = request.with_excluded(node)
                continue
        members = plan.gang if request.gang is not None else (plan.choice,)
        # The commit locks the pool row first (only now, for the commit), then the node.
        chosen = [m for m in members if m is not None]
        try:
            # The first member's commit sets the savepoint in its own round trip.
            committed = [
                commit_member(
                    request,
                    m,
                    pool,
                    index,
                    owner,
                    last=i == len(chosen) - 1,
                    now=now,
                    savepoint=savepoint if i == 0 and preemption is None else None,
                )
                for i, m in enumerate(chosen)
            ]
        except (LostRace, ArchivedMeanwhile) as stop:
            rollback_to(savepoint)
            if isinstance(stop, ArchivedMeanwhile):
                return Outcome("pending", reason=ARCHIVED_REASON, plan=plan, lost=lost)
            lost.append(stop.reason)
            request = request.with_excluded(stop.node)
            continue
        # The savepoint is left to the transaction's commit: releasing it would cost a round trip.
        victims = preemption.victims if preemption is not None else ()
        return Outcome("placed", committed=committed, plan=plan, lost=lost, preempted=victims)
    return gave_up(config, lost)


def gave_up(config: PlacerConfig, lost: list[str]) -> Outcome:
    """Return the pending outcome of a placement that lost the race max_attempts times."""
    return Outcome(
        "pending",
        reason=f"Unschedulable after {config.max_attempts} conflicting attempts: {'; '.join(lost)}",
        lost=lost,
    )


def rollback_to(savepoint: str) -> None:
    """Undo everything since the savepoint: the commit's writes and any spot work taken back."""
    with connection.cursor() as cur:
        cur.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
