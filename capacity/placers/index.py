"""The pool index: a pool's static inventory kept in memory, and the shortlist computed from it.

Nodes, devices, links and labels change rarely; bookings and scalar counters change with every
placement. The index holds the first kind for as long as the pool's generation (bumped by
triggers on every inventory write, never repeating) stays what it was, so a placement reads only
the window's bookings and the kept nodes' scalars. What it plans from may be a moment old: the
guarded commit decides, as for any plan made on plain reads.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import defaultdict
from dataclasses import dataclass

from django.db import connection

from capacity.placement import NodeView, PlacementRequest, Resource, Window, ineligibility, link_rank
from capacity.placement.pick import WORST_KNOWN_RANK

from .loader import NodeIndex, PoolRow, load_node_views, window_range
from .sql import SCALAR_CAPACITY

# Before any booking could exist: the static load sees every device as free.
_NO_WINDOW = Window(0, 1)
_CACHE: dict[int, PoolIndex] = {}
_LOCK = threading.Lock()


@dataclass
class PoolIndex:
    """One pool's static node views and the maps the shortlist and the commit need."""

    generation: int | None
    nodes: NodeIndex  # views with free = every device; resources as of the build (replaced per plan)
    by_name: dict[str, NodeView]
    device_node: dict[int, str]  # device pk -> node name
    device_class: dict[int, str]  # device pk -> class, for healthy and bookable devices only
    parent: dict[int, int]  # slice pk -> parent pk
    children: dict[int, list[int]]  # parent pk -> slice pks
    totals: dict[str, dict[str, int]]  # node -> class -> healthy, bookable devices
    # node -> the best topology score any pick of two or more atoms could get there (static).
    topology_ceiling: dict[str, float]
    device_range: tuple[int, int]  # lowest and highest device pk of the pool
    # (tenant, required labels) -> names of the nodes eligible for it and carrying the labels;
    # both depend only on what the generation covers.
    allowed_cache: dict[tuple, list[str]] = dataclasses.field(default_factory=dict)

    def allowed(self, pool: PoolRow, tenant: str, labels: dict[str, str]) -> list[str]:
        """Return the nodes eligible for the tenant that carry the labels (cached per generation)."""
        key = (tenant, tuple(sorted(labels.items())))
        found = self.allowed_cache.get(key)
        if found is None:
            found = [
                v.id
                for v in self.nodes.views
                if ineligibility(v, pool.view, tenant) is None
                and all(k in v.labels and (want == "*" or v.labels[k] == want) for k, want in labels.items())
            ]
            self.allowed_cache[key] = found
        return found


def pool_index(pool: PoolRow) -> PoolIndex:
    """Return the pool's index, building it when the generation moved (or was never set)."""
    cached = _CACHE.get(pool.pk)
    if cached is not None and pool.generation is not None and cached.generation == pool.generation:
        return cached
    built = _build(pool)
    if pool.generation is not None:
        with _LOCK:
            _CACHE[pool.pk] = built
    return built


def _build(pool: PoolRow) -> PoolIndex:
    nodes = load_node_views(pool.pk, _NO_WINDOW)
    device_node, device_class, parent = {}, {}, {}
    children: dict[int, list[int]] = defaultdict(list)
    totals: dict[str, dict[str, int]] = {}
    for view in nodes.views:
        counts: dict[str, int] = defaultdict(int)
        for atom in view.devices:
            pk = nodes.device_pk[atom.id]
            device_node[pk] = view.id
            if atom.parent_id is not None:
                parent[pk] = nodes.device_pk[atom.parent_id]
                children[parent[pk]].append(pk)
            if atom.healthy and atom.bookable:
                device_class[pk] = atom.device_class
                counts[atom.device_class] += 1
        totals[view.id] = dict(counts)
    return PoolIndex(
        topology_ceiling={v.id: topology_ceiling(v) for v in nodes.views},
        device_range=(min(device_node, default=0), max(device_node, default=-1)),
        generation=pool.generation,
        nodes=nodes,
        by_name={v.id: v for v in nodes.views},
        device_node=device_node,
        device_class=device_class,
        parent=parent,
        children=dict(children),
        totals=totals,
    )


def topology_ceiling(view: NodeView) -> float:
    """Return the most the topology scorer can give a multi-atom pick on this node.

    No pick's worst link beats the node's best link; a pair without a known link scores 0.5; slices
    of one GPU link as NV, so a partitioned node keeps the full 1.
    """
    if any(a.parent_id is not None for a in view.devices):
        return 1.0
    gpus = [a.id for a in view.devices]
    known = [view.links.get(a, {}).get(b) for i, a in enumerate(gpus) for b in gpus[i + 1 :]]
    ranks = [link_rank(link) for link in known if link is not None]
    ceiling = 1.0 - min(ranks) / WORST_KNOWN_RANK if ranks else 0.0
    if len(ranks) < len(known):
        ceiling = max(ceiling, 0.5)
    return ceiling


def taken_devices(pool: PoolRow, index: PoolIndex, window: Window) -> set[int]:
    """Return the pool's devices that are not free for the window (one query).

    A booked GPU takes its slices, and a booked slice takes its GPU.
    """
    # The window's bookings by the GiST index on `during`, narrowed to the pool's range of device
    # keys and then to its devices here: cheaper than joining devices and nodes to find the pool.
    low, high = index.device_range
    with connection.cursor() as cur:
        cur.execute(
            "SELECT device_id FROM capacity_devicebooking WHERE during && %s AND device_id BETWEEN %s AND %s",
            [window_range(window), low, high],
        )
        booked = {row[0] for row in cur.fetchall() if row[0] in index.device_node}
    taken = set(booked)
    for pk in booked:
        if pk in index.parent:
            taken.add(index.parent[pk])
        taken.update(index.children.get(pk, ()))
    return taken


def scalar_room(pool: PoolRow, index: PoolIndex, names: list[str]) -> dict[str, dict[str, int]]:
    """Return each node's room in the named scalar resources, by node name (one query)."""
    if not names:
        return {}
    room: dict[str, dict[str, int]] = defaultdict(dict)
    node_name = {pk: name for name, pk in index.nodes.node_pk.items()}
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT r.node_id, r.resource, {SCALAR_CAPACITY} - r.allocated FROM inventory_noderesource r
                  JOIN inventory_node n ON n.id = r.node_id WHERE n.pool_id = %s AND r.resource = ANY(%s)""",
            [pool.pk, names],
        )
        for node_id, resource, free in cur.fetchall():
            if node_id in node_name:
                room[node_name[node_id]][resource] = free
    return room


@dataclass(frozen=True)
class Candidate:
    """A node that may fit: eligible for the tenant, carrying the labels, with enough free atoms."""

    name: str
    free: dict[str, int]
    total: dict[str, int]


def candidates(
    request: PlacementRequest,
    pool: PoolRow,
    index: PoolIndex,
    taken: set[int],
    room: dict[str, dict[str, int]],
) -> list[Candidate]:
    """Return every node that passes what the count-only ranking can check, with its atom counts.

    Eligibility, labels and scalar room are checked exactly as the planner checks them; plugin
    filters, selectors and links are left to the planner.
    """
    need: dict[str, int] = defaultdict(int)
    for device in request.devices:
        need[device.device_class] += device.count
    booked: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pk in taken:
        device_class = index.device_class.get(pk)
        if device_class in need:
            booked[index.device_node[pk]][device_class] += 1
    claims = [(r, n) for r, n in request.resources.items() if n > 0]
    out = []
    for name in index.allowed(pool, request.tenant_id, dict(request.node_labels)):
        if name in request.exclude_nodes:
            continue
        totals, used = index.totals[name], booked.get(name, {})
        free = {c: totals.get(c, 0) - used.get(c, 0) for c in need}
        if any(free[c] < n for c, n in need.items()):
            continue
        if claims:
            node_room = room.get(name, {})
            if any(node_room.get(r, -1) < n for r, n in claims):
                continue
        out.append(Candidate(name, free, {c: totals.get(c, 0) for c in need}))
    return out


def views_for(index: PoolIndex, names: list[str], taken: set[int]) -> NodeIndex:
    """Return planner-ready views of these nodes: free atoms for the window and current scalars."""
    pks = [index.nodes.node_pk[name] for name in names]
    resources: dict[int, dict[str, Resource]] = defaultdict(dict)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT node_id, resource, allocatable, ratio, allocated FROM inventory_noderesource"
            " WHERE node_id = ANY(%s)",
            [pks],
        )
        for node_id, name, allocatable, ratio, allocated in cur.fetchall():
            resources[node_id][name] = Resource(allocatable=allocatable, ratio=ratio, allocated=allocated)
    device_pk = index.nodes.device_pk
    views = []
    for name, pk in zip(names, pks, strict=True):
        view = index.by_name[name]
        free = tuple(a for a in view.free if device_pk[a.id] not in taken)
        views.append(dataclasses.replace(view, free=free, resources=resources.get(pk, {})))
    views.sort(key=lambda v: v.id)
    return dataclasses.replace(index.nodes, views=views)
