"""The plain values placement reads and returns."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

AttributeValue = str | int | float | bool
SelectorValue = str | int | float

ANY_LABEL_VALUE: Final = "*"
TOPOLOGIES: Final = ("any", "nvlink-all")
PRIORITIES: Final = ("regular", "spot")

# Absorbs float rounding so that 100 * 0.29 (28.999999999999996) floors to 29, like the SQL numeric guard.
SCALAR_EPSILON: Final = 1e-9


def scalar_capacity(allocatable: float, ratio: float = 1.0) -> int:
    """Return how many whole units a scalar resource offers: floor(allocatable * ratio)."""
    return math.floor(allocatable * ratio + SCALAR_EPSILON)


# Attribute numbers the planner reads; beyond, float() overflows and str() may refuse (4,300 digits).
MAX_ATTRIBUTE_INT: Final = 2**63 - 1


def attribute_value(value: object) -> AttributeValue | None:
    """Return a stored attribute as the planner reads it: a scalar, or None (absent) for anything else.

    Inventory checks what nodes report, but the database may hold older values or an operator's
    admin edit; an object, a list, null or a number past a bigint reads as no value, never an error.
    """
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -MAX_ATTRIBUTE_INT <= value <= MAX_ATTRIBUTE_INT else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return None


@dataclass(frozen=True, slots=True)
class Atom:
    """One bookable device: a whole GPU, or a MIG slice or partition of one."""

    id: str
    device_class: str
    parent_id: str | None = None
    healthy: bool = True
    bookable: bool = True
    numa_node: int | None = None
    index: int = 0
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)

    def __hash__(self) -> int:
        # The generated hash would fail on the attributes dict; equal atoms share their id anyway.
        return hash(self.id)


@dataclass(frozen=True, slots=True)
class Resource:
    """A scalar resource row of a node, such as vcpu or memoryGiB."""

    allocatable: float
    ratio: float = 1.0
    allocated: int = 0

    @property
    def capacity(self) -> int:
        """Return the whole units the resource offers in all."""
        return scalar_capacity(self.allocatable, self.ratio)

    @property
    def room(self) -> int:
        """Return the whole units still free."""
        return scalar_capacity(self.allocatable, self.ratio) - self.allocated


@dataclass(frozen=True, slots=True)
class MaintenanceSpan:
    """A maintenance window an operator planned on a node: no new work in [start, end) (epoch ms)."""

    id: str
    start: int
    end: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class NodeView:
    """A read-only view of one node as the placer and plugins see it."""

    id: str
    pool_id: str
    site_id: str = ""
    owner_tenant_id: str | None = None
    role: str = "host"
    provision_state: str = "active"
    connectivity: str = "connected"
    trust: str = "operator"
    maintenance: bool = False
    cordoned: bool = False
    converged: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    no_schedule_reasons: tuple[str, ...] = ()
    devices: tuple[Atom, ...] = ()
    free: tuple[Atom, ...] = ()
    resources: Mapping[str, Resource] = field(default_factory=dict)
    links: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The node's maintenance windows not yet over (any order): a request overlapping one is turned down.
    windows: tuple[MaintenanceSpan, ...] = ()
    # pick.node_shape() of devices and links, or a stand-in equal exactly when it is (such as a
    # small int the caller interned it as): lets the planner share one atom pick and device count
    # among nodes built alike. It must describe this view's devices and links.
    shape: object | None = field(default=None, compare=False, repr=False)

    def __hash__(self) -> int:
        # The generated hash would fail on the mappings; equal views share their id anyway.
        return hash(self.id)


@dataclass(frozen=True, slots=True)
class Pool:
    """The pool a request places into."""

    id: str
    site_id: str = ""
    archived: bool = False
    owner_tenant_id: str | None = None


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open interval [start, end) in epoch milliseconds."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Expression:
    """One selector expression: key, operator and values."""

    key: str
    op: str
    values: tuple[SelectorValue, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """A number of atoms of one class, optionally filtered by a selector."""

    device_class: str = "gpu"
    count: int = 1
    selector: tuple[Expression, ...] = ()
    topology: str | None = None


@dataclass(frozen=True, slots=True)
class Gang:
    """Book size nodes at once, each taking the request's devices."""

    size: int
    topology_key: str | None = None


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A validated placement request."""

    tenant_id: str
    pool_id: str
    during: Window
    devices: tuple[DeviceRequest, ...] = ()
    topology: str = "any"
    reservation_id: str | None = None
    instance_id: str | None = None
    gang: Gang | None = None
    resources: Mapping[str, int] = field(default_factory=dict)
    exclude_nodes: frozenset[str] = frozenset()
    node_labels: Mapping[str, str] = field(default_factory=dict)
    image_id: str | None = None
    priority: str = "regular"
    project_id: str | None = None
    # A whole-node lease (`binding: 'node'`): takes every device and all scalar room of its node(s).
    lease: bool = False
    # The nodes among exclude_nodes that a lost race left out (not the caller): their reason says so.
    lost_nodes: frozenset[str] = frozenset()

    def topology_for(self, device: DeviceRequest) -> str:
        """Return the topology a device request asks for, inheriting the request's."""
        return device.topology if device.topology is not None else self.topology

    def without_lost(self) -> PlacementRequest:
        """Return a copy that may use again the nodes lost races left out (the caller's stay out)."""
        if not self.lost_nodes:
            return self
        return dataclasses.replace(
            self, exclude_nodes=self.exclude_nodes - self.lost_nodes, lost_nodes=frozenset()
        )

    def with_excluded(self, node_id: str) -> PlacementRequest:
        """Return a copy that also leaves out node_id, as after a lost race."""
        return dataclasses.replace(
            self, exclude_nodes=self.exclude_nodes | {node_id}, lost_nodes=self.lost_nodes | {node_id}
        )


@dataclass(frozen=True, slots=True)
class Ranked:
    """A node that fits, with its picked atoms and scores."""

    node_id: str
    atoms: tuple[tuple[str, ...], ...]
    scores: Mapping[str, float]
    score: float


@dataclass(frozen=True, slots=True)
class Rejection:
    """A node turned down, with the filter that did it and why."""

    node_id: str
    filter: str
    reason: str
