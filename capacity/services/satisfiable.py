"""Name at once a request that could never be placed: no node of its pool could take it, even empty."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from capacity.placement import NodeView, PlacementRequest, Plan
from capacity.placement.satisfiable import UNSATISFIABLE, NeverFits, kinds, pool_facts, unsatisfiable
from capacity.placers import quota
from capacity.placers.index import pool_index
from capacity.placers.loader import PoolRow
from capacity.placers.planning import Planner, planner
from capacity.placers.types import PlacerConfig

__all__ = ["UNSATISFIABLE", "NeverFits", "never_fits", "unsatisfiable_condition"]


def never_fits(
    request: PlacementRequest,
    pool: PoolRow,
    tenant_pk: int,
    config: PlacerConfig,
    *,
    plan_empty: bool = True,
    check_quota: bool = True,
    built: Planner | None = None,
) -> NeverFits | None:
    """Return why the request could never be placed in its pool, or None when it could.

    The pool's shape comes from the cached pool index and the tenant's limits cost one query.
    With `plan_empty` the whole pool is also planned emptied (milliseconds at 1,000 nodes), which
    names selectors, links and scalars no node satisfies: callers that only need the cheap checks
    (before queueing) leave it out, and leave out `check_quota` too when a quota charge follows
    (it refuses a request past a limit on its own, without this statement). `built`: the
    request's planner.
    """
    if pool.view.archived:
        return None
    index = pool_index(pool)
    empty = None
    if plan_empty:
        plan = planner(request, pool, config, built)

        def empty(views: Sequence[NodeView]) -> Plan:
            return plan(dataclasses.replace(index.nodes, views=list(views)))

    # Both derived once per pool generation: linear in the pool's devices, which at 10,000 nodes
    # cost a queued request 30 ms when computed per call.
    facts = index.derived.get("facts")
    if facts is None:
        facts = index.derived["facts"] = pool_facts(index.nodes.views)
    grouped = None
    if plan_empty:
        grouped = index.derived.get("kinds")
        if grouped is None:
            grouped = index.derived["kinds"] = kinds(index.nodes.views)
    found = unsatisfiable(request, facts, pool.view.id, empty, grouped)
    if found is not None:
        return found
    if not check_quota:
        return None
    demand = quota.demand(request)
    for resource, limit in quota.limits(tenant_pk, demand).items():
        if limit is not None and demand[resource] > limit:
            return NeverFits(
                f"more than the tenant's quota allows at once: {demand[resource]} {resource} asked,"
                f" the limit is {limit}",
                "quota",
            )
    return None


def unsatisfiable_condition(why: NeverFits) -> dict:
    """Return the condition a never-fitting reservation carries beside its Unschedulable one."""
    return {"type": UNSATISFIABLE, "status": "True", "reason": why.field, "message": why.message}
