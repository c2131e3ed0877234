"""The earliest start at which a request's window fits, from every booking of its pool over time.

A node's free atoms only grow when a booking or claim on it ends, so the earliest start at which a
node can take the request is the requested start or the end of one of its own bookings or claims.
The search walks those moments in time order: a cheap count (free atoms per class and scalar room
over the shifted window) skips most of them, and `fits` (the real planner, passed in) has the last
word on each that passes. The first moment the planner accepts is the answer.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .timeline import peak

Interval = tuple[int, int]  # [start, end) in epoch milliseconds
Claim = tuple[int, int, int]  # start, end, amount


@dataclass(frozen=True, slots=True)
class NodeTime:
    """One node over the horizon: its atoms per class and what holds them, and its scalars.

    `busy` maps an atom to the intervals in which it cannot be booked: its own bookings and those
    of its parent GPU or slices. `held` maps a scalar resource to its claims. `closed` holds the
    node's maintenance windows, in which nothing new may run.
    """

    atoms: Mapping[str, Sequence[int]]
    busy: Mapping[int, Sequence[Interval]]
    capacity: Mapping[str, int]
    held: Mapping[str, Sequence[Claim]]
    group: str | None = None  # the gang's topology key value, when the request has one
    # Maintenance windows: no window of the request may overlap one (the whole node is closed then).
    closed: Sequence[Interval] = ()


@dataclass(frozen=True, slots=True)
class Shape:
    """What the request takes on each node: atoms per class and scalar claims, for `duration` ms."""

    need: Mapping[str, int]
    claims: Mapping[str, int]
    duration: int
    gang_size: int | None = None
    whole_node: bool = False  # a lease: every atom and no claim may be held in the window


# fits(start, node names) returns the planner's answer for the window starting there, or None.
Fits = Callable[[int, Sequence[str]], object | None]


class Counts:
    """A node's busy atoms per class at any start, for one request length, in two bisections.

    An atom cannot take a window starting at t when one of its bookings [s, e) overlaps
    [t, t + duration): when t lies in the open interval (s - duration, e). Merged per atom, such
    intervals never overlap, so the atoms busy at t are the intervals opened before t minus those
    already closed.
    """

    def __init__(self, node: NodeTime, duration: int) -> None:
        self.opens: dict[str, list[int]] = {}
        self.closes: dict[str, list[int]] = {}
        for device_class, atoms in node.atoms.items():
            opens, closes = [], []
            for atom in atoms:
                spans = node.busy.get(atom)
                if not spans:
                    continue
                if len(spans) == 1:  # most atoms: nothing to merge
                    (s, e) = spans[0]
                    opens.append(s - duration)
                    closes.append(e)
                    continue
                for low, high in _merged((s - duration, e) for s, e in spans):
                    opens.append(low)
                    closes.append(high)
            self.opens[device_class], self.closes[device_class] = sorted(opens), sorted(closes)
        self.totals = {c: len(atoms) for c, atoms in node.atoms.items()}

    def free(self, device_class: str, start: int) -> int:
        """Return how many atoms of the class are free for the whole window starting at `start`."""
        opens = self.opens.get(device_class)
        if opens is None:
            return 0
        busy = bisect_left(opens, start) - bisect_right(self.closes[device_class], start)
        return self.totals[device_class] - busy


def _merged(spans: Iterable[Interval]) -> list[Interval]:
    """Return open intervals merged where they overlap (touching ones stay apart: the point is free)."""
    out: list[Interval] = []
    for low, high in sorted(spans):
        if out and low < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def passes(node: NodeTime, shape: Shape, start: int, counts: Counts | None = None) -> bool:
    """Return whether the node has the atoms and scalar room the shape needs for the window at `start`."""
    end = start + shape.duration
    if node.closed and any(s < end and e > start for s, e in node.closed):
        return False
    if shape.whole_node:
        held_atoms = any(s < end and e > start for spans in node.busy.values() for s, e in spans)
        return not held_atoms and not any(s < end and e > start for c in node.held.values() for s, e, _ in c)
    counts = counts or Counts(node, shape.duration)
    for device_class, count in shape.need.items():
        if counts.free(device_class, start) < count:
            return False
    for resource, amount in shape.claims.items():
        if amount <= 0:
            continue
        if resource not in node.capacity:
            return False
        if node.capacity[resource] - peak(node.held.get(resource, ()), start, end) < amount:
            return False
    return True


def moments(node: NodeTime, start: int, latest: int) -> list[int]:
    """Return the requested start and every end of the node's bookings, claims and windows up to `latest`."""
    ends = {e for spans in node.busy.values() for _, e in spans if start < e <= latest}
    ends.update(e for _, e in node.closed if start < e <= latest)
    ends.update(e for claims in node.held.values() for _, e, _ in claims if start < e <= latest)
    return [start, *sorted(ends)]


def earliest_start(
    shape: Shape, nodes: Mapping[str, NodeTime], start: int, latest: int, fits: Fits
) -> tuple[int, list[str]] | None:
    """Return the earliest start in [start, latest] at which the request fits, and the nodes to plan.

    The nodes are those whose counts pass at that start: `fits(answer, nodes)` gives the plan the
    placer would make then. None when nothing fits within the horizon.
    """
    if shape.gang_size is not None:
        return _earliest_gang(shape, nodes, start, latest, fits)
    queue = [(start, name, 0) for name in nodes]
    heapq.heapify(queue)
    # A node's moments and counts, computed when it is first passed over.
    later: dict[str, list[int]] = {}
    counts: dict[str, Counts] = {}

    def counted(name: str) -> Counts:
        found = counts.get(name)
        if found is None:
            found = counts[name] = Counts(nodes[name], shape.duration)
        return found

    while queue:
        at, name, position = heapq.heappop(queue)
        node = nodes[name]
        if passes(node, shape, at, counted(name)) and fits(at, [name]) is not None:
            return at, [n for n in sorted(nodes) if passes(nodes[n], shape, at, counted(n))]
        times = later.get(name)
        if times is None:
            times = later[name] = moments(node, start, latest)
        if position + 1 < len(times):
            heapq.heappush(queue, (times[position + 1], name, position + 1))
    return None


def _earliest_gang(
    shape: Shape, nodes: Mapping[str, NodeTime], start: int, latest: int, fits: Fits
) -> tuple[int, list[str]] | None:
    size = shape.gang_size or 0
    every = sorted({t for node in nodes.values() for t in moments(node, start, latest)})
    counts = {name: Counts(node, shape.duration) for name, node in nodes.items()}
    for at in every:
        groups: dict[str | None, list[str]] = {}
        for name in sorted(nodes):
            if passes(nodes[name], shape, at, counts[name]):
                groups.setdefault(nodes[name].group, []).append(name)
        if not any(len(names) >= size for names in groups.values()):
            continue
        names = sorted(n for g in groups.values() if len(g) >= size for n in g)
        if fits(at, names) is not None:
            return at, names
    return None
