"""The earliest start over bookings at hand: each moment the pure search passes is planned here.

The pure search (capacity.placement.earliest) walks the moments; each candidate it passes is
planned from the same in-memory intervals with the planner the placer uses, and no SQL: the pool's
bookings over the horizon are read by horizon_reads.py, or kept by a what-if run.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from capacity.placement import PlacementRequest, Plan, Window
from capacity.placement.earliest import Claim, Fits, Interval, NodeTime, Shape, earliest_start
from capacity.placement.lease import plan_lease
from capacity.placement.satisfiable import kinds
from capacity.placement.timeline import peak
from capacity.placers.types import PlacerConfig

from .index import PoolIndex, views_for
from .loader import PoolRow
from .planning import Planner, planner

# earliest_start's signature: (shape, nodes, start, latest, fits) -> (start, nodes to plan) or None.
Search = Callable[[Shape, Mapping[str, NodeTime], int, int, Fits], tuple[int, list[str]] | None]


@dataclasses.dataclass
class Horizon:
    """The pool's bookings (by device pk) and scalar claims (by node and resource) over a horizon."""

    busy: dict[int, list[Interval]]
    held: dict[str, dict[str, list[Claim]]]


def horizon_of(
    index: PoolIndex, busy: dict[int, list[Interval]], claims: Sequence[tuple[str | None, str, int, int, int]]
) -> Horizon:
    """Return the horizon of these bookings (device pk -> spans) and claims (node name, resource, span, amount).

    A booked GPU holds its slices and a booked slice its GPU, so each interval is given to both.
    """
    device_node = index.device_node
    busy = defaultdict(list, busy)
    if index.parent:  # only partitioned GPUs tie devices together
        # Each device's own bookings, copied first: spans handed on must not be handed on again
        # (a GPU would pass a slice's bookings to its other slices).
        own = {pk: tuple(spans) for pk, spans in busy.items()}
        for pk, spans in own.items():
            if pk in index.parent:
                busy[index.parent[pk]].extend(spans)
            for child in index.children.get(pk, ()):
                busy[child].extend(spans)
    for pk in [pk for pk in busy if pk not in device_node]:
        del busy[pk]  # a device in the key range of another pool
    held: dict[str, dict[str, list[Claim]]] = defaultdict(lambda: defaultdict(list))
    for node, name, s, e, n in claims:
        if node is not None and node in index.by_name:
            held[node][name].append((s, e, n))
    return Horizon(dict(busy), held)


def shape_of(request: PlacementRequest) -> Shape:
    """Return what the request takes on each node, and for how long."""
    need: dict[str, int] = defaultdict(int)
    for device in request.devices:
        need[device.device_class] += device.count
    return Shape(
        need=dict(need),
        claims={r: n for r, n in request.resources.items() if n > 0},
        duration=request.during.end - request.during.start,
        gang_size=request.gang.size if request.gang is not None else None,
        whole_node=request.lease,
    )


def node_times(
    request: PlacementRequest, index: PoolIndex, horizon: Horizon, names: Sequence[str]
) -> dict[str, NodeTime]:
    """Return each named node over the horizon, as the pure search reads it."""
    key = request.gang.topology_key if request.gang is not None else None
    result = {}
    for name in names:
        group = None
        if key is not None:
            group = index.by_name[name].labels.get(key)
            if group is None:
                continue  # a gang member must carry the key
        atoms: dict[str, list[int]] = defaultdict(list)
        busy = {}
        for pk in sorted(index.node_devices[name]):
            if pk in horizon.busy:
                busy[pk] = horizon.busy[pk]
            if pk in index.device_class:
                atoms[index.device_class[pk]].append(pk)
        # A lease takes whole nodes: the search asks only whether a node is free, never its room.
        capacity = {r: index.capacities(r)[name] for r in request.resources if name in index.capacities(r)}
        closed = tuple((w.start, w.end) for w in index.by_name[name].windows)
        result[name] = NodeTime(dict(atoms), busy, capacity, horizon.held.get(name, {}), group, closed)
    return result


def earliest_in(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    index: PoolIndex,
    horizon: Horizon,
    latest: int,
    built: Planner | None = None,
    times: Callable[[Sequence[str]], dict[str, NodeTime]] | None = None,
    search: Search = earliest_start,
) -> tuple[Window, Plan] | None:
    """Return find_earliest's answer from bookings already at hand (a what-if run keeps its own).

    `times(names)`, when given, returns the nodes' NodeTime as node_times() would (a caller that
    keeps them between requests); by default they are built from the horizon. `search` answers as
    earliest_start does (a what-if run's FreeIndex keeps what it knew between searches).
    """
    built = Planner.of(request, pool, config, built)
    duration = request.during.end - request.during.start
    start = request.during.start
    allowed = index.allowed(pool, request.tenant_id, dict(request.node_labels))
    names = [n for n in viable(request, pool, config, index, built) if n in allowed.names]
    nodes = times(names) if times is not None else node_times(request, index, horizon, names)
    plan_at = _planner_at(request, pool, config, index, nodes, duration, built)
    found = search(shape_of(request), nodes, start, latest, plan_at)
    if found is None:
        return None
    at, fitting = found
    plan = plan_at(at, fitting)
    assert plan is not None
    return Window(at, at + duration), plan


def viable(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    index: PoolIndex,
    built: Planner | None = None,
) -> list[str]:
    """Return the nodes (not excluded) that could take one member of the request with nothing booked.

    One node of each kind is planned emptied: a kind that cannot (a selector it does not match, an
    NVLink shape it lacks, too little scalar room) is left out of the search, which would
    otherwise plan its nodes at every moment their counts pass.
    """
    grouped = index.derived.get("kinds")
    if grouped is None:
        grouped = index.derived["kinds"] = kinds(index.nodes.views)
    single = dataclasses.replace(request, gang=None, during=Window(request.during.start, request.during.end))
    plan = planner(single, pool, config, built)
    excluded = request.exclude_nodes
    names: list[str] = []
    for group in grouped:
        members = [n for n in group if n.id not in excluded]
        if not members:
            continue
        if request.lease or plan(dataclasses.replace(index.nodes, views=[members[0]])).fits:
            names.extend(n.id for n in members)
    return sorted(names)


def _planner_at(request, pool, config, index, nodes, duration, built=None):
    """Return fits(start, names): the plan for the window at `start` over those nodes, when it fits."""
    bound = Planner.of(request, pool, config, built)

    def fits(at: int, names: Sequence[str]) -> Plan | None:
        end = at + duration
        shifted = dataclasses.replace(request, during=Window(at, end))
        # Bound to the shifted window (binding reads nothing): maintenance windows are checked against it.
        plan = bound.bind(shifted)
        if request.lease:
            # passes() already found every device and claim of these nodes free in the window.
            result = plan_lease(shifted, [index.by_name[n] for n in names], pool.view, {})
            return result if result.fits else None
        taken = {
            pk
            for name in names
            for pk, spans in nodes[name].busy.items()
            if any(s < end and e > at for s, e in spans)
        }
        used = {
            name: {r: most for r, claims in nodes[name].held.items() if (most := peak(claims, at, end))}
            for name in names
        }
        result = plan(views_for(index, list(names), taken, used), index.memo())
        return result if result.fits else None

    return fits
