"""Requests no node of a pool could take even if the pool were empty, named with the limit they pass."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Sequence
from typing import Final

from .pick import node_shape
from .plan import Plan
from .types import NodeView, PlacementRequest, Resource

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
            tuple(tuple(sorted(a.attributes.items())) for a in empty.devices),
            tuple(sorted(empty.labels.items())),
            empty.owner_tenant_id,
            empty.role,
            empty.trust,
            empty.site_id,
            tuple(sorted((r, v.capacity) for r, v in empty.resources.items())),
        )
        groups.setdefault(key, []).append(empty)
    return list(groups.values())


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


def unsatisfiable(
    request: PlacementRequest,
    nodes: Sequence[NodeView],
    pool_name: str,
    plan_empty: Callable[[Sequence[NodeView]], Plan] | None = None,
    grouped: Sequence[Sequence[NodeView]] | None = None,
) -> str | None:
    """Return why no node of the pool could take the request even if it were empty, or None.

    Checked in order: device classes, selector keys, atoms per node, then the planner itself over
    the pool emptied (`plan_empty`, when given), which names selectors, links and scalars no node
    satisfies. `grouped` (kinds() of the nodes) lets it plan one node of each kind first: only
    when none fits is the whole pool planned, for a reason that counts every node. Leases and
    gangs larger than the pool are left to their own checks.
    """
    if not nodes:
        return None  # an empty pool is reported as such by the planner
    classes = sorted({a.device_class for n in nodes for a in n.devices})
    totals = [atom_totals(n) for n in nodes]
    keys = _known_keys(nodes)
    for device in request.devices:
        if device.device_class not in classes:
            listed = ", ".join(classes) if classes else "none"
            return f"no node in {pool_name} has class {device.device_class}: classes are {listed}"
    for device in request.devices:
        for expr in device.selector:
            if expr.op in _ABSENT_OK or expr.key in keys:
                continue
            text = f"no device or node in {pool_name} has {expr.key}"
            nearest = _nearest(expr.key, keys)
            return f"{text}; did you mean {nearest}?" if nearest else text
    need: dict[str, int] = {}
    for device in request.devices:
        need[device.device_class] = need.get(device.device_class, 0) + device.count
    for device_class, count in need.items():
        largest = max(t.get(device_class, 0) for t in totals)
        if count > largest:
            return f"the largest node in {pool_name} has {largest} {device_class}"
    if request.lease or plan_empty is None:
        return None
    if grouped is not None and request.gang is None:
        excluded = request.exclude_nodes
        firsts = [next((n for n in g if n.id not in excluded), None) for g in grouped]
        if plan_empty([n for n in firsts if n is not None]).fits:
            return None
    every = [n for g in grouped for n in g] if grouped is not None else [emptied(n) for n in nodes]
    plan = plan_empty(sorted(every, key=lambda n: n.id))
    if plan.fits or plan.archived:
        return None
    return f"no node in {pool_name} could take it even with nothing booked: {plan.pending_reason()}"
