"""Requests no node of a pool could take even if the pool were empty, named with the limit they pass."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Sequence
from typing import Final

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
) -> str | None:
    """Return why no node of the pool could take the request even if it were empty, or None.

    Checked in order: device classes, selector keys, atoms per node, then the planner itself over
    the pool emptied (`plan_empty`, when given), which names selectors, links and scalars no node
    satisfies.
    Leases and gangs larger than the pool are left to their own checks.
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
    plan = plan_empty([emptied(n) for n in nodes])
    if plan.fits or plan.archived:
        return None
    return f"no node in {pool_name} could take it even with nothing booked: {plan.pending_reason()}"
