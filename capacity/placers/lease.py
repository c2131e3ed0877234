"""Whole-node leases against the database: the lease placer's attempt and its guarded commit.

Leases place inline under both placers, as gangs do: the caller needs an answer at once. The plan
comes from capacity.placement.lease; the commit is the placer's own guarded commit, booking every
device of the node and claiming its whole scalar room, so the EXCLUDE constraint and the scalar
guard decide a race with any other booking exactly as they do for device requests. What holds each
node in a window, and the plan on those reads, are lease_reads.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from capacity.placement import ARCHIVED_REASON, PlacementRequest, Plan, Ranked
from capacity.placement.lease import lease_demand, scalar_room, top_level

from .attempt import Way, attempt, commit_members
from .commit import Committed, Owner
from .index import pool_index
from .lease_reads import plan_lease_now
from .loader import NodeIndex, PoolRow
from .preempt import find_lease_preemption
from .types import Outcome, PlacerConfig


def place_lease(
    request: PlacementRequest,
    pool: PoolRow,
    owner: Owner,
    config: PlacerConfig,
    *,
    charge: Callable[[Mapping[str, int]], None],
    now: datetime | None = None,
) -> Outcome:
    """Lease the best leasable node (or gang of nodes) in the caller's transaction.

    `charge(amounts)` charges quota for the nodes chosen (their atoms and scalars) before the
    commit takes the pool lock, and raises to refuse; a lost race rolls both back and plans again
    without the node.
    """
    if pool.view.archived:
        return Outcome("pending", reason=ARCHIVED_REASON)
    static = pool_index(pool)

    def plan(req: PlacementRequest) -> tuple[Plan, NodeIndex]:
        found, index = plan_lease_now(req, pool)
        return found, index.nodes

    def commit(
        req: PlacementRequest, members: Sequence[Ranked], index: NodeIndex, savepoint: str | None
    ) -> list[Committed]:
        def whole(member: Ranked) -> dict:
            view, usable = static.by_name[member.node_id], set(member.atoms[0])
            return {
                "also_book": tuple(d for d in top_level(view) if d not in usable),
                "lease_claims": scalar_room(view),
            }

        return commit_members(req, members, pool, index, owner, now, savepoint, extra=whole)

    way = Way(
        savepoint="capacity_lease",
        plan=plan,
        preemption=lambda req: find_lease_preemption(req, pool),
        commit=commit,
        charge=lambda members, _index: charge(lease_demand([static.by_name[m.node_id] for m in members])),
        pool=pool,
    )
    return attempt(request, way, owner, config, now)
