"""Whole-node leases: which nodes a `binding: 'node'` request may take, best first, and why not the rest.

A lease takes a whole node for its window: every device and MIG slice on it and its whole scalar
room. It does not run the device pipeline (spec: leases do not go through placement); a node is
leasable when it is eligible for the tenant exactly as the placer decides (a dedication to the
tenant tolerated), is not excluded, and nothing on it is booked or claimed in the window.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from .eligibility import ineligibility
from .maintenance import WINDOW_FILTER, overlapping, window_reason
from .plan import EXCLUDED_FILTER, EXCLUDED_REASON, FITS_FILTER, LOST_RACE_REASON
from .result import Plan, ranked_plan
from .types import NodeView, PlacementRequest, Pool, Ranked, Rejection

# Scorer name in a lease candidate's scores: the share of the node's devices that are healthy and
# bookable (a lease on a node with a broken GPU is worth less), 1.0 at best.
LEASE_SCORE: Final = "healthy"
EMPTY_NODE_REASON: Final = "no devices and no scalar resources"


@dataclass(frozen=True, slots=True)
class Busy:
    """What holds a node in the window: top-level devices booked per class, claimed scalars, until when."""

    until: str  # when the last booking or claim overlapping the window ends, such as 2026-12-04T10:00Z
    devices: Mapping[str, int] = field(default_factory=dict)
    scalars: tuple[str, ...] = ()


def top_level(node: NodeView) -> tuple[str, ...]:
    """Return the node's devices that are not slices: what a lease books (slices go with their GPU)."""
    return tuple(a.id for a in node.devices if a.parent_id is None)


def atom_counts(node: NodeView) -> dict[str, int]:
    """Return per class the atoms of a node, broken ones too (a split GPU counts as its slices).

    A lease holds the whole node as it is, so it is charged for every atom it holds.
    """
    split = {a.parent_id for a in node.devices if a.parent_id is not None}
    counts: dict[str, int] = {}
    for atom in node.devices:
        if atom.id not in split:
            counts[atom.device_class] = counts.get(atom.device_class, 0) + 1
    return counts


def lease_demand(nodes: Iterable[NodeView]) -> dict[str, int]:
    """Return what leasing these nodes holds per quota resource: their atoms per class, their scalars."""
    amounts: dict[str, int] = {}
    for node in nodes:
        for resource, n in [*atom_counts(node).items(), *scalar_room(node).items()]:
            amounts[resource] = amounts.get(resource, 0) + n
    return amounts


def scalar_room(node: NodeView) -> dict[str, int]:
    """Return the whole scalar room of a node, resource by resource (nothing for an empty resource)."""
    return {r: v.capacity for r, v in sorted(node.resources.items()) if v.capacity > 0}


def busy_reason(node: NodeView, busy: Busy) -> str:
    """Return "booked until 2026-12-05T12:00Z: 3 of 8 gpu" (or "vcpu claimed until …")."""
    totals: dict[str, int] = {}
    for atom in node.devices:
        if atom.parent_id is None:
            totals[atom.device_class] = totals.get(atom.device_class, 0) + 1
    parts = [f"{n} of {totals.get(c, n)} {c}" for c, n in sorted(busy.devices.items())]
    if parts:
        return f"booked until {busy.until}: {', '.join(parts)}"
    return f"{', '.join(busy.scalars)} claimed until {busy.until}"


def _evaluate(request: PlacementRequest, node: NodeView, pool: Pool, busy: Busy | None) -> Ranked | Rejection:
    found = ineligibility(node, pool, request.tenant_id)
    if found is not None:
        return Rejection(node.id, found.filter, found.reason)
    if node.windows:
        span = overlapping(node.windows, request.during.start, request.during.end)
        if span is not None:
            return Rejection(node.id, WINDOW_FILTER, window_reason(span))
    if node.id in request.exclude_nodes:
        lost = node.id in request.lost_nodes
        return Rejection(node.id, EXCLUDED_FILTER, LOST_RACE_REASON if lost else EXCLUDED_REASON)
    if busy is not None:
        return Rejection(node.id, FITS_FILTER, busy_reason(node, busy))
    devices = top_level(node)
    if not devices and not scalar_room(node):
        return Rejection(node.id, FITS_FILTER, EMPTY_NODE_REASON)
    usable = tuple(a.id for a in node.devices if a.parent_id is None and a.healthy and a.bookable)
    score = round(len(usable) / len(devices), 6) if devices else 1.0
    # The atoms are what the tenant can use; the commit books the node's other devices too.
    return Ranked(node.id, (usable,), {LEASE_SCORE: score}, score)


def plan_lease(
    request: PlacementRequest, nodes: Sequence[NodeView], pool: Pool, busy: Mapping[str, Busy]
) -> Plan:
    """Return the leasable nodes best first (healthiest, then by name) and every other node's reason.

    A gang lease takes `gang.size` nodes, all sharing the topology key's value when one is given.
    """
    gang = request.gang
    gang_size = gang.size if gang is not None else None
    gang_key = gang.topology_key if gang is not None else None
    if pool.archived:
        return Plan((), (), None, len(nodes), gang_size=gang_size, gang_topology_key=gang_key, archived=True)
    ranked: list[Ranked] = []
    rejected: list[Rejection] = []
    for node in nodes:
        outcome = _evaluate(request, node, pool, busy.get(node.id))
        (ranked if isinstance(outcome, Ranked) else rejected).append(outcome)  # type: ignore[arg-type]
    ranked.sort(key=lambda r: (-r.score, r.node_id))
    return ranked_plan(request, ranked, rejected, nodes, lambda: ranked[0] if ranked else None)
