"""The inline placer: plan on plain reads, lock the pool, commit in a savepoint, replan on a lost race."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import connection

from capacity import rules
from capacity.placement import ARCHIVED_REASON, PlacementRequest, Ranked, Window

from .attempt import Way, attempt, commit_members, savepoint_of
from .commit import Committed, Owner
from .index import PoolIndex
from .loader import NodeIndex, PoolRow, load_pool
from .planning import Planner
from .preempt import find_preemption
from .reads import Reads, plan_request, send_reads
from .types import Outcome, PlacerConfig

SAVEPOINT = "capacity_place"  # each attempt's: attempt.savepoint_of


def send_ahead(index: PoolIndex, window: Window, claims: Mapping[str, int]) -> Reads:
    """Send a request's window reads, then its first attempt's savepoint (inside the caller's pipeline).

    The commit is then one call of its own, outside any pipeline.
    """
    reads = send_reads(index, window, claims)
    reads.savepoint = savepoint_of(SAVEPOINT, 1)
    with connection.cursor() as plain:
        plain.execute(f"SAVEPOINT {reads.savepoint}")
    return reads


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
    built: Planner | None = None,
) -> Outcome:
    """Place `request` inside the caller's transaction; lost races replan up to max_attempts times.

    `pool` is the pool as the caller already read it (unlocked), to save reading it again. When
    placed, the owning reservation is marked placed as of `now` in the same statement. A regular
    request that fits only by taking spot work back preempts it (capacity.placers.preempt);
    `holds_pool` says the caller already locked the pool, so victims held elsewhere are skipped.
    `reads` are the window's reads the caller sent ahead (send_reads), for the first plan;
    `built` is the request's planner, when the caller built it. A spot request that finds no room
    may be placed by the pool's NO_ROOM rules (capacity.rules: lending idle owners' GPUs, policy.lending).
    """
    pool = pool or load_pool(pool_slug)
    if pool is None or pool.view.archived:
        if reads is not None:
            reads.close()
        return Outcome("pending", reason=ARCHIVED_REASON)
    built = Planner.of(request, pool, config, built)
    ahead = [reads]

    def plan(req: PlacementRequest):
        sent, ahead[0] = ahead[0], None  # a replan after a lost race reads afresh
        return plan_request(req, pool, config, reads=sent, built=built)

    def commit(
        req: PlacementRequest, members: Sequence[Ranked], index: NodeIndex, savepoint: str | None
    ) -> list[Committed]:
        # The commit locks the pool row first (only now, for the commit), then the node.
        return commit_members(req, members, pool, index, owner, now, savepoint)

    way = Way(
        savepoint=SAVEPOINT,
        preset=reads.savepoint if reads is not None else None,
        plan=plan,
        preemption=lambda req: find_preemption(req, pool, built.bind(req)),
        commit=commit,
        waits=not holds_pool,
        pool=pool,
    )
    outcome = attempt(request, way, owner, config, now)
    if outcome.status == "pending" and request.priority == "spot":
        # No room on free capacity: the pool's rules may place it otherwise (idle owners' GPUs, lent).
        return rules.no_room(rules.NoRoom(request, pool, owner, config, now, built, holds_pool)) or outcome
    return outcome
