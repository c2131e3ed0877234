"""Requests no node of a pool could take even if the pool were empty, named with the limit they pass."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from .pick import node_shape
from .result import Plan
from .types import Atom, NodeView, PlacementRequest, Resource, attribute_value

UNSATISFIABLE: Final = "Unsatisfiable"
# Operators that hold for an atom lacking the key: an unknown key cannot make them fail.
_ABSENT_OK: Final = frozenset({"DoesNotExist", "NotIn"})


def atom_totals(node: NodeView) -> dict[str, int]:
    """Return the node's atoms per class whatever their health: a GPU split into slices is not one."""
    split = {a.parent_id for a in node.devices if a.parent_id is not None}
    totals: dict[str, int] = {}
    for atom in node.devices:
        if atom.id not in split:
            totals[atom.device_class] = totals.get(atom.device_class, 0) + 1
    return totals


def emptied(node: NodeView) -> NodeView:
    """Return the node as it would be with nothing booked and every operator state cleared."""
    devices = tuple(dataclasses.replace(a, healthy=True, bookable=True) for a in node.devices)
    return dataclasses.replace(
        node,
        provision_state="active",
        connectivity="connected",
        maintenance=False,
        cordoned=False,
        converged=True,
        no_schedule_reasons=(),
        windows=(),
        devices=devices,
        free=devices,
        resources={r: Resource(v.allocatable, v.ratio, 0) for r, v in node.resources.items()},
    )


def kinds(nodes: Sequence[NodeView]) -> list[list[NodeView]]:
    """Return the nodes emptied and grouped by everything the planner reads of an empty node.

    Nodes of one kind get the same verdict on an empty pool, so one of each need be planned.
    """
    groups: dict[tuple[object, ...], list[NodeView]] = {}
    for node in nodes:
        empty = emptied(node)
        key = (
            node_shape(empty),
            tuple(_attribute_key(a) for a in empty.devices),
            tuple(sorted(empty.labels.items())),
            empty.owner_tenant_id,
            empty.role,
            empty.trust,
            empty.site_id,
            tuple(sorted((r, v.capacity) for r, v in empty.resources.items())),
        )
        groups.setdefault(key, []).append(empty)
    return list(groups.values())


def _attribute_key(atom: Atom) -> tuple[tuple[str, str, object], ...]:
    """Return an atom's attributes as the planner reads them, hashable: a stored object or list
    (unhashable) reads as absent there, so it does here."""
    read = ((str(k), attribute_value(v)) for k, v in atom.attributes.items())
    # The type goes into the key: True == 1 and 1 == 1.0 would otherwise make two kinds one.
    return tuple(sorted((k, type(v).__name__, v) for k, v in read if v is not None))


def _known_keys(nodes: Sequence[NodeView]) -> set[str]:
    keys = {k for n in nodes for k in n.labels}
    keys.update(k for n in nodes for a in n.devices for k in a.attributes)
    return keys


def _nearest(key: str, keys: set[str]) -> str | None:
    folded = {k.lower(): k for k in sorted(keys)}
    if key.lower() in folded:
        return folded[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.75)
    return folded[close[0]] if close else None


@dataclass(frozen=True)
class NeverFits:
    """Why a request can never be placed, and the request field the limit is about."""

    message: str
    field: str  # "class", "selector", "count", "quota" or "request"


@dataclass(frozen=True)
class PoolFacts:
    """What the cheap checks read of a pool: its device classes, the most atoms of each on one node,
    and every device attribute and node label key. The same while the pool's inventory is."""

    classes: tuple[str, ...]
    largest: Mapping[str, int]
    keys: frozenset[str]
    node_count: int


def pool_facts(nodes: Sequence[NodeView]) -> PoolFacts:
    """Return the facts of a pool's nodes (linear in their devices: callers keep it per generation)."""
    largest: dict[str, int] = {}
    for node in nodes:
        for device_class, count in atom_totals(node).items():
            largest[device_class] = max(largest.get(device_class, 0), count)
    classes = tuple(sorted({a.device_class for n in nodes for a in n.devices}))
    return PoolFacts(classes, largest, frozenset(_known_keys(nodes)), len(nodes))


def unsatisfiable(
    request: PlacementRequest,
    facts: PoolFacts,
    pool_name: str,
    plan_empty: Callable[[Sequence[NodeView]], Plan] | None = None,
    grouped: Sequence[Sequence[NodeView]] | None = None,
) -> NeverFits | None:
    """Return why no node of the pool could take the request even if it were empty, or None.

    Checked in order: device classes, selector keys, atoms per node (from `facts`), then the
    planner itself over the pool emptied (`plan_empty` over `grouped`, kinds() of the nodes, when
    given), which names selectors, links and scalars no node satisfies: one node of each kind is
    planned first, and only when none fits is the whole pool planned, for a reason that counts
    every node. Leases and gangs larger than the pool are left to their own checks.
    """
    if not facts.node_count:
        return None  # an empty pool is reported as such by the planner
    classes, keys = facts.classes, facts.keys
    for device in request.devices:
        if device.device_class not in classes:
            listed = ", ".join(classes) if classes else "none"
            return NeverFits(
                f"no node in {pool_name} has class {device.device_class}: classes are {listed}", "class"
            )
    for device in request.devices:
        for expr in device.selector:
            if expr.op in _ABSENT_OK or expr.key in keys:
                continue
            text = f"no device or node in {pool_name} has {expr.key}"
            nearest = _nearest(expr.key, set(keys))
            return NeverFits(f"{text}; did you mean {nearest}?" if nearest else text, "selector")
    need: dict[str, int] = {}
    for device in request.devices:
        need[device.device_class] = need.get(device.device_class, 0) + device.count
    for device_class, count in need.items():
        largest = facts.largest.get(device_class, 0)
        if count > largest:
            return NeverFits(f"the largest node in {pool_name} has {largest} {device_class}", "count")
    if request.lease or plan_empty is None or grouped is None:
        return None
    if request.gang is None:
        excluded = request.exclude_nodes
        firsts = [next((n for n in g if n.id not in excluded), None) for g in grouped]
        if plan_empty([n for n in firsts if n is not None]).fits:
            return None
    plan = plan_empty(sorted((n for g in grouped for n in g), key=lambda n: n.id))
    if plan.fits or plan.archived:
        return None
    reason = plan.pending_reason()
    return NeverFits(f"no node in {pool_name} could take it even with nothing booked: {reason}", "request")
