"""The pool index: a pool's static inventory kept in memory, and the shortlist computed from it.

Nodes, devices, links and labels change rarely; bookings and scalar counters change with every
placement. The index holds the first kind for as long as the pool's generation (bumped by
triggers on every inventory write, never repeating) stays what it was, so a placement reads only
the window's bookings and scalar claims. What it plans from may be a moment old: the
guarded commit decides, as for any plan made on plain reads.
"""

from __future__ import annotations

import dataclasses
import heapq
import operator
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat

from capacity.placement import (
    NodeView,
    PickMemo,
    PlacementRequest,
    Resource,
    Window,
    closes,
    ineligibility,
    link_rank,
    node_shape,
)
from capacity.placement.pick import WORST_KNOWN_RANK

from .claims import WindowUse
from .loader import NodeIndex, PoolRow, largest_open_pools, load_node_views, load_pool

# Before any booking could exist: the static load sees every device as free.
_NO_WINDOW = Window(0, 1)
_CACHE: dict[int, PoolIndex] = {}
# A process keeps the indexes of this many pools; building one costs about 0.2 s per 1,000 nodes.
MAX_CACHED_POOLS = 32
# Shapes times counts times free subsets: a few thousand for pools of 8-GPU nodes.
PICK_MEMO_LIMIT = 50_000
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Allowed:
    """The nodes eligible for one tenant and label set, and the same names grouped for the shortlist.

    Each group holds, in name order, the nodes with equal atom totals per class and equal link
    ceiling: with every atom free they all reach the same score.
    """

    names: frozenset[str]
    groups: list[tuple[tuple[tuple[tuple[str, int], ...], float], list[str]]]


@dataclass
class PoolIndex:
    """One pool's static node views and the maps the shortlist and the commit need."""

    generation: int | None
    nodes: NodeIndex  # views with free = every device; resources as of the build (replaced per plan)
    by_name: dict[str, NodeView]
    node_name: dict[int, str]  # node pk -> name
    device_node: dict[int, str]  # device pk -> node name
    node_devices: dict[str, frozenset[int]]  # node name -> its device pks
    device_class: dict[int, str]  # device pk -> class, for healthy and bookable atoms only
    parent: dict[int, int]  # slice pk -> parent pk
    children: dict[int, list[int]]  # parent pk -> slice pks
    totals: dict[str, dict[str, int]]  # node -> class -> healthy, bookable devices
    # node -> the best topology score any pick of two or more atoms could get there (static).
    topology_ceiling: dict[str, float]
    device_range: tuple[int, int]  # lowest and highest device pk of the pool
    node_range: tuple[int, int]  # lowest and highest node pk of the pool
    # The one class of every device, when all are of one class, healthy and bookable: then a
    # taken device counts for its node without looking at its class.
    single_class: str | None = None
    # node -> its maintenance windows not yet over, for the nodes that have any (most have none).
    windowed: dict[str, tuple] = dataclasses.field(default_factory=dict)
    # (tenant, required labels) -> the nodes eligible for it and carrying the labels; both depend
    # only on what the generation covers. Resource rows come and go with the generation too.
    allowed_cache: dict[tuple, Allowed] = dataclasses.field(default_factory=dict)
    lacking_cache: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    capacity_cache: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    small_cache: dict[tuple[str, int], frozenset[str]] = dataclasses.field(default_factory=dict)
    # Atom picks shared by nodes of one shape (their views carry node_shape()); bounded below.
    pick_memo: PickMemo = dataclasses.field(default_factory=dict)
    # What other modules derive from the static views once per generation, by their own key
    # (the emptied pool the never-fits check plans, for one).
    derived: dict[str, object] = dataclasses.field(default_factory=dict)

    @property
    def keys(self) -> dict[str, int]:
        """Return the key-range parameters of every window read (`key_in` over devices and nodes)."""
        (low, high), (node_low, node_high) = self.device_range, self.node_range
        return {"low": low, "high": high, "node_low": node_low, "node_high": node_high}

    def memo(self) -> PickMemo:
        """Return the pick memo, emptied first when it has grown past its bound."""
        if len(self.pick_memo) > PICK_MEMO_LIMIT:
            self.pick_memo.clear()
        return self.pick_memo

    def allowed(self, pool: PoolRow, tenant: str, labels: dict[str, str]) -> Allowed:
        """Return the nodes eligible for the tenant that carry the labels (cached per generation)."""
        key = (tenant, tuple(sorted(labels.items())))
        found = self.allowed_cache.get(key)
        if found is None:
            names = [
                v.id
                for v in self.nodes.views
                if ineligibility(v, pool.view, tenant) is None
                and all(k in v.labels and (want == "*" or v.labels[k] == want) for k, want in labels.items())
            ]
            groups: dict[tuple, list[str]] = defaultdict(list)
            for name in sorted(names):
                groups[(tuple(sorted(self.totals[name].items())), self.topology_ceiling[name])].append(name)
            found = self.allowed_cache[key] = Allowed(frozenset(names), list(groups.items()))
        return found

    def tie(self, pks: Iterable[int]) -> set[int]:
        """Return these devices with what they tie up: a booked GPU its slices, a booked slice its GPU."""
        return self.tie_into(set(pks))

    def tie_into(self, tied: set[int]) -> set[int]:
        """Add to `tied` (and return it) what its devices tie up, as tie() does, without a copy."""
        if self.parent:  # only partitioned GPUs tie devices together
            # The intersections run in C: of thousands of bookings, few are of a split GPU.
            slices, gpus = tied.intersection(self.parent), tied.intersection(self.children)
            tied.update(map(self.parent.__getitem__, slices))
            for pk in gpus:
                tied.update(self.children[pk])
        return tied

    def capacities(self, resource: str) -> dict[str, int]:
        """Return node -> floor(allocatable × ratio) for the nodes with a row for this resource."""
        found = self.capacity_cache.get(resource)
        if found is None:
            found = self.capacity_cache[resource] = {
                v.id: v.resources[resource].capacity for v in self.nodes.views if resource in v.resources
            }
        return found

    def short(self, claims: Mapping[str, int], used: WindowUse) -> Short:
        """Return the nodes whose room in a claimed scalar (capacity − `used`) is below the claim."""
        return Short(self, claims, used)

    def too_small(self, resource: str, amount: int) -> frozenset[str]:
        """Return the nodes whose whole capacity in a resource is below `amount` (cached per amount)."""
        key = (resource, amount)
        found = self.small_cache.get(key)
        if found is None:
            if len(self.small_cache) > PICK_MEMO_LIMIT:
                self.small_cache.clear()
            found = self.small_cache[key] = frozenset(
                name for name, capacity in self.capacities(resource).items() if capacity < amount
            )
        return found

    def lacking(self, resource: str) -> frozenset[str]:
        """Return the nodes with no row for a scalar resource."""
        found = self.lacking_cache.get(resource)
        if found is None:
            found = self.lacking_cache[resource] = frozenset(
                v.id for v in self.nodes.views if resource not in v.resources
            )
        return found


def pool_index(pool: PoolRow) -> PoolIndex:
    """Return the pool's index, building it when the generation moved (or was never set)."""
    cached = _CACHE.get(pool.pk)
    if cached is not None and pool.generation is not None and cached.generation == pool.generation:
        return cached
    built = _build(pool)
    if pool.generation is not None:
        with _LOCK:
            _CACHE.pop(pool.pk, None)
            _CACHE[pool.pk] = built
            while len(_CACHE) > MAX_CACHED_POOLS:
                del _CACHE[next(iter(_CACHE))]  # the pool whose index was built longest ago
    return built


def warm_indexes() -> int:
    """Build the index of the open pools, largest first, up to MAX_CACHED_POOLS; return how many.

    A new web process runs it before its first request (config/warmup.py): a pool page whose
    chart is drawn again (each minute) needs its pool's index, 0.3 s for 1,000 nodes of 8 GPUs.
    """
    built = 0
    for slug in largest_open_pools(MAX_CACHED_POOLS):
        pool = load_pool(slug)
        if pool is not None:
            pool_index(pool)
            built += 1
    return built


def _build(pool: PoolRow) -> PoolIndex:
    return index_of(load_node_views(pool.pk, _NO_WINDOW), pool.generation)


def index_of(nodes: NodeIndex, generation: int | None = None) -> PoolIndex:
    """Return the index of these static views (every atom free), as a pool's is built from its rows.

    What-if runs build one from a changed copy of a pool's views; nothing here reads the database.
    """
    # Shapes are long tuples; a small int per distinct shape hashes in no time.
    shapes: dict[tuple, int] = {}
    nodes.views = [
        dataclasses.replace(v, shape=shapes.setdefault(node_shape(v), len(shapes))) for v in nodes.views
    ]
    device_node, device_class, parent = {}, {}, {}
    children: dict[int, list[int]] = defaultdict(list)
    totals: dict[str, dict[str, int]] = {}
    for view in nodes.views:
        counts: dict[str, int] = defaultdict(int)
        split = {a.parent_id for a in view.devices if a.parent_id is not None}
        for atom in view.devices:
            pk = nodes.device_pk[atom.id]
            device_node[pk] = view.id
            if atom.parent_id is not None:
                parent[pk] = nodes.device_pk[atom.parent_id]
                children[parent[pk]].append(pk)
            # A GPU split into slices is not an atom; its slices are.
            if atom.healthy and atom.bookable and atom.id not in split:
                device_class[pk] = atom.device_class
                counts[atom.device_class] += 1
        totals[view.id] = dict(counts)
    return PoolIndex(
        topology_ceiling={v.id: topology_ceiling(v) for v in nodes.views},
        # An empty pool gets (0, 0): no device has key 0, and the range must not be empty.
        device_range=(min(device_node, default=0), max(device_node, default=0)),
        node_range=(min(nodes.node_pk.values(), default=0), max(nodes.node_pk.values(), default=0)),
        single_class=_single_class(device_class, device_node),
        windowed={v.id: v.windows for v in nodes.views if v.windows},
        generation=generation,
        nodes=nodes,
        by_name={v.id: v for v in nodes.views},
        node_name={pk: name for name, pk in nodes.node_pk.items()},
        node_devices={v.id: frozenset(nodes.device_pk[a.id] for a in v.devices) for v in nodes.views},
        device_node=device_node,
        device_class=device_class,
        parent=parent,
        children=dict(children),
        totals=totals,
    )


def _single_class(device_class: dict[int, str], device_node: dict[int, str]) -> str | None:
    """Return the pool's one device class when every device is of it, healthy and bookable."""
    classes = set(device_class.values())
    if len(classes) == 1 and len(device_class) == len(device_node):
        return classes.pop()
    return None


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


Used = Mapping[str, Mapping[str, int]]  # node name -> resource -> the most claimed in a window


class Short:
    """The nodes whose room in a claimed scalar is below the claim, decided per node when asked.

    A shortlist asks about the nodes it ranks, best first, and stops early: deciding for every node
    with a claim up front cost more than the rest of a batch's plan.
    """

    def __init__(self, index: PoolIndex, claims: Mapping[str, int], used: WindowUse):
        self.used = used
        self.checks = [
            (
                resource,
                amount,
                index.lacking(resource),
                index.too_small(resource, amount),
                index.capacities(resource),
            )
            for resource, amount in sorted(claims.items())
            if amount > 0
        ]
        self._memo: dict[str, bool] = {}

    def __contains__(self, name: object) -> bool:
        found = self._memo.get(name)  # type: ignore[call-overload]
        if found is None:
            found = self._memo[name] = any(  # type: ignore[index]
                name in lacking or name in small or self._lacks(name, resource, amount, capacities)  # type: ignore[arg-type]
                for resource, amount, lacking, small, capacities in self.checks
            )
        return found

    def _lacks(self, name: str, resource: str, amount: int, capacities: Mapping[str, int]) -> bool:
        room = capacities.get(name, 0)
        if room - self.used.bound(name, resource) >= amount:
            return False
        return room - self.used.get(name, {}).get(resource, 0) < amount


Reach = Callable[[int, int, str], float]


def shortlist_order(
    request: PlacementRequest,
    pool: PoolRow,
    index: PoolIndex,
    taken: set[int],
    short: Short,
    reach: Reach,
) -> Iterator[tuple[float, str]]:
    """Yield (reach, name) for every node that passes what the count-only ranking can check, best first.

    Eligibility, labels, maintenance windows and scalar room are checked exactly as the planner
    checks them; plugin filters, selectors and links are left to the planner. `reach(free, total, name)` is a node's best
    possible total from its free and total atoms of the requested classes. Only nodes with an atom
    taken in the window are counted one by one; the others have every atom free, so each group of
    equal totals and link ceiling shares one reach and keeps its names in order.
    """
    need: dict[str, int] = defaultdict(int)
    for device in request.devices:
        need[device.device_class] += device.count
    device_class, device_node = index.device_class, index.device_node
    allowed = index.allowed(pool, request.tenant_id, dict(request.node_labels))
    excluded = request.exclude_nodes
    touched = []
    booked: Mapping[str, object]
    if index.single_class is not None and set(need) == {index.single_class}:
        # One class in the pool and the request: a count per node, counted in C, says it all. This
        # loop runs over every node with an atom taken in the window, for every placement.
        cls, wanted = index.single_class, need[index.single_class]
        booked = Counter(map(device_node.__getitem__, taken))
        names, totals = allowed.names, index.totals
        for name, used_atoms in booked.items():
            if name in names and name not in excluded:
                total = totals[name].get(cls, 0)
                if total - used_atoms >= wanted:
                    touched.append((-reach(total - used_atoms, total, name), name))
    else:
        by_class = {c: Counter(device_node[pk] for pk in taken if device_class.get(pk) == c) for c in need}
        per_node: dict[str, dict[str, int]] = defaultdict(dict)
        for c, counted in by_class.items():
            for name, n in counted.items():
                per_node[name][c] = n
        booked = per_node
        for name, used in per_node.items():
            if name not in allowed.names or name in excluded:
                continue
            counts = index.totals[name]
            if any(counts.get(c, 0) - used.get(c, 0) < n for c, n in need.items()):
                continue
            total = sum(counts.get(c, 0) for c in need)
            touched.append((-reach(total - sum(used.values()), total, name), name))
    touched.sort()
    streams: list[Iterable[tuple[float, str]]] = [touched]
    for (counts, _ceiling), names in allowed.groups:
        if any(dict(counts).get(c, 0) < n for c, n in need.items()):
            continue
        total = sum(dict(counts).get(c, 0) for c in need)
        streams.append(_untouched(-reach(total, total, names[0]), names, booked, excluded))
    # A node whose maintenance window overlaps the request is one the planner turns down.
    closed = {name for name, spans in index.windowed.items() if closes(spans, request.during)}
    # Scalar room last, and only for the nodes taken from the stream: it may mean a sweep.
    for value, name in heapq.merge(*streams):
        if name not in short and name not in closed:
            yield -value, name


def _untouched(
    value: float, names: list[str], booked: Mapping[str, object], excluded: frozenset[str]
) -> Iterator[tuple[float, str]]:
    for name in names:
        if name not in booked and name not in excluded:
            yield value, name


_VIEW_FIELDS = tuple(f.name for f in dataclasses.fields(NodeView))
_view_values = operator.attrgetter(*_VIEW_FIELDS)


def _with_state(view: NodeView, free: tuple, resources: dict[str, Resource]) -> NodeView:
    """Return a copy of a static view with this plan's free atoms and scalars.

    dataclasses.replace() does the same through __init__; on the placement path this is measurably
    cheaper, and the view stays frozen.
    """
    new = object.__new__(NodeView)
    # Every field at once, the loop in C.
    deque(map(object.__setattr__, repeat(new), _VIEW_FIELDS, _view_values(view)), 0)
    object.__setattr__(new, "free", free)
    object.__setattr__(new, "resources", resources)
    return new


def views_for(index: PoolIndex, names: list[str], taken: set[int], used: Used) -> NodeIndex:
    """Return planner-ready views of these nodes: free atoms and scalar use for the window."""
    device_pk = index.nodes.device_pk
    views = []
    for name in names:
        view = index.by_name[name]
        free = view.free
        if not taken.isdisjoint(index.node_devices[name]):
            free = tuple(a for a in free if device_pk[a.id] not in taken)
        claims = used.get(name)
        resources = view.resources
        if claims:
            resources = {
                r: Resource(v.allocatable, v.ratio, claims.get(r, 0)) if r in claims else v
                for r, v in resources.items()
            }
        # A node with nothing booked or claimed in the window plans as its static view.
        views.append(
            view if free is view.free and resources is view.resources else _with_state(view, free, resources)
        )
    views.sort(key=lambda v: v.id)
    return dataclasses.replace(index.nodes, views=views)
