"""The earliest-start search for a caller that keeps its nodes between searches (what if's book).

`earliest_start` rebuilds every node's free counts for the request's length on each search. Under
contention, when many requests wait, that rebuild is most of a search. `FreeIndex` keeps what does
not depend on the length, per node, and rebuilds a node only when the caller says it changed:

- its **segments**: between two instants at which one of its atoms' bookings starts or ends, the
  atoms that are free and when each is next booked. An atom is free for the window [t, t + d) when
  nothing holds it at t and its next booking starts at t + d or later, so the k-th latest "next
  booked" among the free atoms says whether k atoms are free, for any length;
- its **moments**: the ends of its bookings and claims, in one sorted list for every node, so a
  search walks them in time order without a heap of every node.

The answers, and the order in which `fits` is asked, are `earliest_start`'s (a test compares them
over random books). Shapes with scalar claims or whole nodes (leases) go to `earliest_start`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .earliest import Fits, NodeTime, Shape, earliest_start

NEVER = 1 << 62  # "next booked" of an atom no later booking holds: after any window ends


@dataclass(frozen=True, slots=True)
class Profile:
    """One node's free atoms between the starts and ends of its bookings, and its moments.

    Segment i holds the instants from bounds[i - 1] (or always) up to bounds[i] (or forever):
    per class, when each free atom is next booked, latest first.
    """

    bounds: list[int]
    segments: list[dict[str, tuple[int, ...]]]
    moments: list[int]
    group: str | None

    def until(self, need: Mapping[str, int], duration: int, at: int) -> int | None:
        """Return the latest start at which the node still has the atoms needed as at `at`, or None.

        Valid from `at` until the node's next moment: no atom is freed before then.
        """
        segment = self.segments[bisect_right(self.bounds, at)]
        latest = NEVER
        for device_class, count in need.items():
            if count <= 0:
                continue
            free = segment.get(device_class)
            if free is None or len(free) < count:
                return None
            if free[count - 1] < latest:
                latest = free[count - 1]
        latest -= duration
        return latest if latest >= at else None


def profile(node: NodeTime) -> Profile:
    """Return the node's segments and moments (a sweep over its atoms' bookings)."""
    starts: dict[int, list[int]] = {}  # atom -> its bookings' starts, sorted
    events: dict[int, list[tuple[int, int]]] = {}  # instant -> (atom, change in what holds it)
    klass: dict[int, str] = {}
    for device_class, atoms in node.atoms.items():
        for atom in atoms:
            klass[atom] = device_class
            spans = node.busy.get(atom, ())
            starts[atom] = sorted(s for s, _ in spans)
            for s, e in spans:
                events.setdefault(s, []).append((atom, 1 if s < e else 0))
                events.setdefault(e, []).append((atom, -1 if s < e else 0))
    held = dict.fromkeys(klass, 0)
    after = dict.fromkeys(klass, 0)  # atom -> index of its first start past the segment's beginning

    def free_of(device_class: str) -> tuple[int, ...]:
        return tuple(
            sorted(
                (nxt[after[a]] if after[a] < len(nxt := starts[a]) else NEVER)
                for a in node.atoms[device_class]
                if not held[a]
            )[::-1]
        )

    current = {device_class: free_of(device_class) for device_class in node.atoms}
    bounds = sorted(events)
    segments = [current]
    for instant in bounds:
        changed = set()
        for atom, step in events[instant]:
            held[atom] += step
            changed.add(klass[atom])
            nxt = starts[atom]
            while after[atom] < len(nxt) and nxt[after[atom]] <= instant:
                after[atom] += 1
        current = {**current, **{c: free_of(c) for c in changed}}
        segments.append(current)
    ends = {e for spans in node.busy.values() for _, e in spans}
    ends.update(e for claims in node.held.values() for _, e, _ in claims)
    return Profile(bounds, segments, sorted(ends), node.group)


class FreeIndex:
    """Every node's profile and the moments of all of them in time order, updated node by node."""

    def __init__(self) -> None:
        self.profiles: dict[str, Profile] = {}
        self.times: list[int] = []  # every instant some node has a moment at, sorted
        self.ending: dict[int, set[str]] = {}  # instant -> the nodes with a moment then

    def update(self, name: str, node: NodeTime) -> None:
        """Rebuild one node from its timeline (after its bookings changed)."""
        old = self.profiles.get(name)
        new = self.profiles[name] = profile(node)
        gone = set(old.moments) if old is not None else set()
        came = set(new.moments)
        for t in gone - came:
            names = self.ending[t]
            names.discard(name)
            if not names:
                del self.ending[t]
                del self.times[bisect_left(self.times, t)]
        for t in came - gone:
            if t not in self.ending:
                self.ending[t] = set()
                insort(self.times, t)
            self.ending[t].add(name)

    def earliest(
        self, shape: Shape, nodes: Mapping[str, NodeTime], start: int, latest: int, fits: Fits
    ) -> tuple[int, list[str]] | None:
        """Return `earliest_start(shape, nodes, start, latest, fits)`, asking `fits` the same questions.

        Every node named in `nodes` must have been given to `update` as it is now (or changed only
        before `start`).
        """
        if shape.whole_node or any(n > 0 for n in shape.claims.values()):
            return earliest_start(shape, nodes, start, latest, fits)
        if shape.gang_size is not None:
            return self._gang(shape, nodes, start, latest, fits)
        need, duration, profiles = shape.need, shape.duration, self.profiles
        # name -> the latest start it has the atoms for, as of its last moment walked.
        alive: dict[str, int] = {}
        for name in sorted(nodes):
            until = profiles[name].until(need, duration, start)
            if until is not None:
                alive[name] = until
                if fits(start, [name]) is not None:  # every node is read at `start`: read the rest
                    return start, [
                        n for n in sorted(nodes) if profiles[n].until(need, duration, start) is not None
                    ]
        for at, names in self._walk(start, latest):
            for name in sorted(names) if len(names) > 1 else names:
                if name not in nodes:
                    continue
                until = profiles[name].until(need, duration, at)
                if until is None:
                    alive.pop(name, None)
                    continue
                alive[name] = until
                if fits(at, [name]) is not None:
                    return at, self._passing(shape, nodes, alive, at)
        return None

    def _gang(
        self, shape: Shape, nodes: Mapping[str, NodeTime], start: int, latest: int, fits: Fits
    ) -> tuple[int, list[str]] | None:
        size = shape.gang_size or 0
        need, duration, profiles = shape.need, shape.duration, self.profiles
        alive: dict[str, int] = {}
        for name in nodes:
            until = profiles[name].until(need, duration, start)
            if until is not None:
                alive[name] = until
        found = self._gang_at(shape, nodes, alive, start, size, fits)
        if found is not None:
            return found
        for at, names in self._walk(start, latest):
            walked = False
            for name in names:
                if name not in nodes:
                    continue
                walked = True
                until = profiles[name].until(need, duration, at)
                if until is None:
                    alive.pop(name, None)
                else:
                    alive[name] = until
            if not walked:
                continue  # no node of the search has a moment then: earliest_start never looks
            found = self._gang_at(shape, nodes, alive, at, size, fits)
            if found is not None:
                return found
        return None

    def _gang_at(
        self,
        shape: Shape,
        nodes: Mapping[str, NodeTime],
        alive: dict[str, int],
        at: int,
        size: int,
        fits: Fits,
    ) -> tuple[int, list[str]] | None:
        """Return (at, members) when enough nodes of one group pass at `at` and the planner agrees."""
        for name in [n for n, until in alive.items() if until < at]:
            del alive[name]  # its room ends before `at`; only its next moment can bring it back
        if len(alive) < size:
            return None
        groups: dict[str | None, list[str]] = {}
        for name in alive:
            groups.setdefault(self.profiles[name].group, []).append(name)
        names = sorted(n for g in groups.values() if len(g) >= size for n in g)
        if names and fits(at, names) is not None:
            return at, names
        return None

    def _walk(self, start: int, latest: int) -> Iterator[tuple[int, set[str]]]:
        """Yield each instant in (start, latest] at which some node has a moment, with those nodes."""
        times, ending = self.times, self.ending
        for i in range(bisect_right(times, start), len(times)):
            at = times[i]
            if at > latest:
                return
            yield at, ending[at]

    def _passing(
        self, shape: Shape, nodes: Mapping[str, NodeTime], alive: dict[str, int], at: int
    ) -> list[str]:
        """Return the nodes whose counts pass at `at`: those walked, and any with a moment then."""
        moment = self.ending.get(at, set())
        out = [n for n, until in alive.items() if until >= at and n not in moment]
        for name in moment:
            if name in nodes and self.profiles[name].until(shape.need, shape.duration, at) is not None:
                out.append(name)
        return sorted(out)
