"""A node as the pool page and the node page draw it: its GPU grid, state badges, labels and room."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Prefetch, prefetch_related_objects

from capacity import services
from capacity.access import scope_for
from capacity.placement import scalar_capacity
from capacity.rollups import claimed_at
from capacity.services.reservations import drain_state
from inventory.models import Device, Node, NodeLabel, Pool, PoolGeneration
from inventory.states import BLOCKING_EFFECTS, NodeState, node_states

from .common import (
    GRID_AHEAD,
    TIME_FORMAT,
    Booking,
    bookings_by_device,
    device_label,
)

CELL_TEXT = {
    "free": "free",
    "now": "booked now",
    "later": "booked later this week",
    "unhealthy": "unhealthy",
    "unbookable": "unbookable",
}


@dataclass
class Cell:
    """One atom in the GPU grid; a partitioned GPU holds its MIG slices."""

    label: str
    state: str
    title: str
    slices: list[Cell] = field(default_factory=list)
    spot: bool = False  # the booking that gives the state is spot work


@dataclass
class LeaseBlock:
    """A node a whole-node lease holds now: drawn as one block instead of its GPU cells."""

    holder: str  # the tenant, or "another tenant" to a tenant that may not read it
    until: datetime
    spot: bool
    reservation_id: int | None  # only when the viewer may open the reservation

    @property
    def text(self) -> str:
        return f"leased by {self.holder} until {self.until:{TIME_FORMAT}} UTC"

    @property
    def title(self) -> str:
        kind = "spot whole-node lease" if self.spot else "whole-node lease"
        return f"{kind}: every device of the node, until {self.until:{TIME_FORMAT}} UTC"


@dataclass
class Badge:
    """A state the node is in, as text (never colour alone); kind picks the style."""

    text: str
    kind: str
    title: str = ""


@dataclass
class Scalar:
    name: str
    free: int
    total: int


@dataclass
class NodeRow:
    """A node as the pool page and the node page draw it."""

    node: Node
    cells: list[Cell]
    badges: list[Badge]
    labels: list[NodeLabel]
    system_labels: list[NodeLabel]
    scalars: list[Scalar]
    schedulable: bool
    free_gpus: int
    total_gpus: int
    free_slices: int = 0
    total_slices: int = 0
    actions: list[str] = field(default_factory=list)
    own_labels: list[NodeLabel] | None = None  # the labels not shared by every row of the page
    lease: LeaseBlock | None = None
    states: list[NodeState] = field(default_factory=list)  # inventory.states, as the viewer sees them
    changes_at: datetime | None = None  # the next start or end of a booking drawn: the row differs then

    @property
    def state_text(self) -> str:
        """Return the node's states in words: "NotReady · cordoned", or "schedulable"."""
        return " · ".join(s.text for s in self.states)

    @property
    def scalar_map(self) -> dict[str, Scalar]:
        return {s.name: s for s in self.scalars}

    @property
    def system_labels_text(self) -> str:
        return "\n".join(f"{label.key}={label.value}" for label in self.system_labels)

    @property
    def labels_text(self) -> str:
        return "\n".join(f"{label.key}={label.value}" for label in self.labels)


def split_common_labels(rows: list[NodeRow]) -> list[tuple[str, str]]:
    """Return the operator labels every row shares, and leave each row only its own.

    Operators scan for what differs; labels every node of the page carries are shown once.
    """
    if len(rows) < 2:
        for row in rows:
            row.own_labels = row.labels
        return []
    common = set.intersection(*({(lb.key, lb.value) for lb in row.labels} for row in rows))
    for row in rows:
        row.own_labels = [lb for lb in row.labels if (lb.key, lb.value) not in common]
    return sorted(common)


def _cell_state(device: Device, bookings: list[Booking], now: datetime) -> tuple[str, Booking | None]:
    """Return the cell's state and the booking that gives it (running now, else the next)."""
    running = next((b for b in bookings if b.start <= now < b.end), None)
    if not device.healthy:
        return "unhealthy", running
    if not device.bookable:
        return "unbookable", running
    if running is not None:
        return "now", running
    return ("later", bookings[0]) if bookings else ("free", None)


def _cell(device: Device, bookings: dict[int, list[Booking]], now: datetime, parent: Device | None = None):
    own = bookings.get(device.pk, [])
    state, booking = _cell_state(device, own, now)
    spot = booking is not None and booking.spot and state in ("now", "later")
    label = device_label(device, parent)
    text = f"{CELL_TEXT[state]}, spot" if spot else CELL_TEXT[state]
    lines = [f"{label} · {text}", device.uuid, *(b.text for b in own)]
    return Cell(label=str(device.index), state=state, title="\n".join(lines), spot=spot)


def lease_now(devices: list[Device], bookings: dict[int, list[Booking]], now: datetime) -> LeaseBlock | None:
    """Return the whole-node lease holding the node now, if any (it books every device, so any shows it)."""
    held = [b for d in devices for b in bookings.get(d.pk, []) if b.lease and b.start <= now < b.end]
    if not held:
        return None
    first = held[0]
    until = max(b.end for b in held if b.reservation_id == first.reservation_id)
    return LeaseBlock(first.holder, until, first.spot, first.reservation_id if first.mine else None)


def badges(node: Node, pool: Pool, scope=services.EVERYONE) -> list[Badge]:
    """Return the node's states (inventory.states, as the viewer sees them) as badges, with the drain.

    Besides the states: who owns a node in its owner's pool, and taints that only prefer other
    nodes (PreferNoSchedule), which stop nothing.
    """
    found = []
    for state in node_states(node, scope):
        found.append(Badge(state.label, state.badge, state.meaning))
        if state.name == "cordoned":
            drain = drain_badge(node, scope)
            if drain is not None:
                found.append(drain)
    if node.owner_tenant_id is not None and node.owner_tenant_id == pool.owner_tenant_id:
        found.append(
            Badge(f"owned by {node.owner_tenant.slug}", "info", "tenant-owned node in its owner's pool")
        )
    for taint in node.taints.all():
        if taint.effect not in BLOCKING_EFFECTS:
            found.append(Badge(f"△ tainted {taint}", "muted", "prefers other nodes; places here when needed"))
    return found


def drain_badge(node: Node, scope=services.EVERYONE, now: datetime | None = None) -> Badge | None:
    """Return "draining until <last end> UTC" or "drained" for a node being drained, else None.

    The reason is the operator's own text: only operators read it (in the title here).
    """
    state = drain_state(node, now)
    if state is None:
        return None
    status, until = state
    title = "cordoned; bookings that had not started were moved off"
    if scope.reads_operators_words and node.drain_reason:
        title = f"{title}; reason: {node.drain_reason}"
    if status == "draining":
        return Badge(
            f"⇣ draining until {until:{TIME_FORMAT}} UTC", "warn", f"{title}; running work ends by then"
        )
    return Badge("⇣ drained", "warn", f"{title}; nothing runs here now")


# A node's devices, labels and resources change only with its pool's generation (inventory's
# triggers bump it with every change of them), and reading them made half of a pool page's time:
# each process keeps them per pool for the generation it read, filled for the nodes asked for.
_STATIC: dict[int, tuple[int, dict[int, dict[str, list]]]] = {}
_STATIC_NODES = 20_000  # nodes a process keeps per pool, at most
_STATIC_PARTS = ("devices", "labels", "resources")


def _prefetch(nodes: list[Node], pool: Pool) -> None:
    """Give `nodes` their devices, labels, resources (from the generation's cache) and taints."""
    # The generation is read before the rows: rows read after it are as new as it or newer.
    generation = PoolGeneration.objects.filter(pool_id=pool.pk).values_list("generation", flat=True).first()
    held_at, held = _STATIC.get(pool.pk, (None, {}))
    if generation is None or held_at != generation or len(held) > _STATIC_NODES:
        held = {}
    missing = [n for n in nodes if n.pk not in held]
    fresh = {n.pk for n in missing}
    prefetch_related_objects(
        missing, Prefetch("devices", queryset=Device.objects.order_by("index", "uuid")), "labels", "resources"
    )
    for node in missing:
        held[node.pk] = {part: list(node._prefetched_objects_cache[part]) for part in _STATIC_PARTS}
    if generation is not None:
        _STATIC[pool.pk] = (generation, held)
    for node in nodes:
        if node.pk in held and node.pk not in fresh:
            cache = node.__dict__.setdefault("_prefetched_objects_cache", {})
            for part, rows in held[node.pk].items():
                # What prefetch_related_objects leaves: a queryset whose rows are already read.
                queryset = getattr(node, part).all()
                queryset._result_cache, queryset._prefetch_done = rows, True
                cache[part] = queryset
    # Taints that do not block scheduling bump no generation: read each time.
    prefetch_related_objects(nodes, "taints")


def node_rows(nodes: list[Node], pool: Pool, user, now: datetime) -> list[NodeRow]:
    """Build the rows of these nodes in five queries whatever their number.

    Devices, labels, taints and resources are prefetched; one query reads the bookings of all their
    devices within the grid's window (now to a week ahead).
    """
    _prefetch(nodes, pool)
    device_ids = [d.pk for n in nodes for d in n.devices.all() if d.verified]
    bookings = bookings_by_device(device_ids, now, now + GRID_AHEAD, user)
    claimed = claimed_at([n.pk for n in nodes], now)
    scope = scope_for(user)
    rows = []
    for node in nodes:
        node.pool = pool  # the states read the pool's owner; no query per node
        # A device no operator accepted yet is drawn nowhere and counted nowhere (the node page
        # lists it with its accept button).
        devices = [d for d in node.devices.all() if d.verified]
        by_pk = {d.pk: d for d in devices}
        cells: dict[int, Cell] = {}
        # Whole devices first, so that every slice finds its parent's cell.
        for device in sorted(devices, key=lambda d: d.parent_id is not None):
            parent = by_pk.get(device.parent_id) if device.parent_id else None
            cell = _cell(device, bookings, now, parent)
            if parent is not None and parent.pk in cells:
                cells[parent.pk].slices.append(cell)
            else:
                cells[device.pk] = cell
        # Whole GPUs only: a GPU split into MIG slices is drawn with its slices and counted as them.
        whole = [cells[d.pk] for d in devices if d.parent_id is None and d.device_class == "gpu"]
        gpus = [c for c in whole if not c.slices]
        slices = [s for c in whole for s in c.slices]
        labels = list(node.labels.all())
        states = node_states(node, scope)
        bookable = states[-1].name == "schedulable"
        rows.append(
            NodeRow(
                node=node,
                cells=list(cells.values()),
                badges=badges(node, pool, scope),
                labels=[label for label in labels if label.source != NodeLabel.Source.SYSTEM],
                system_labels=[label for label in labels if label.source == NodeLabel.Source.SYSTEM],
                scalars=[
                    Scalar(
                        r.resource,
                        scalar_capacity(r.allocatable, r.ratio) - claimed.get((node.pk, r.resource), 0),
                        scalar_capacity(r.allocatable, r.ratio),
                    )
                    for r in node.resources.all()
                ],
                schedulable=bookable,
                # Bookable now, as the free_gpus filter and the API's freeGpusNow count.
                free_gpus=sum(1 for c in gpus if _free_now(c)) if bookable else 0,
                total_gpus=len(gpus),
                free_slices=sum(1 for c in slices if _free_now(c)) if bookable else 0,
                total_slices=len(slices),
                actions=["uncordon" if node.cordoned else "cordon"],
                lease=lease_now(devices, bookings, now),
                states=states,
                changes_at=_changes_at(devices, bookings, now),
            )
        )
    return rows


def _changes_at(devices: list[Device], bookings: dict[int, list[Booking]], now: datetime) -> datetime | None:
    """Return when the next booking of these devices starts or ends (what time alone changes)."""
    moments = [t for d in devices for b in bookings.get(d.pk, []) for t in (b.start, b.end) if t > now]
    return min(moments, default=None)


def _free_now(cell: Cell) -> bool:
    """Return whether a GPU is free now (as the free_gpus filter counts), with all its slices."""
    # A booking later this week leaves it free now; a partitioned GPU needs every slice free too.
    return all(c.state in ("free", "later") for c in (cell, *cell.slices))
