"""Place a what-if run's requests in arrival order on an in-memory booking book, with the real planner.

Each request is planned as the placer plans it — the shortlist, the pure planner with the
configured plugins, weights and top N, the spot preemption rule, the earliest start — from a
book of the run's own bookings instead of the database's. A request that fits at its window is
booked there; a regular one that fits only over spot work takes it back (the victims end at its
start); anything else waits until its earliest start within the horizon, or is never placed.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from capacity.placement import PlacementRequest, Plan, Window
from capacity.placement.earliest import NodeTime
from capacity.placement.lease import plan_lease
from capacity.placers.claims import WindowUse
from capacity.placers.horizon import Horizon, earliest_in, horizon_of, node_times
from capacity.placers.index import PoolIndex, Short, views_for
from capacity.placers.loader import PoolRow
from capacity.placers.planning import Planner, plan_shortlist, uses_shortlist
from capacity.placers.types import PlacerConfig

from .demand import HOUR, Arrival

GC_EVERY = 64  # requests between sweeps of ended bookings out of the live book
_NO_HORIZON = Horizon({}, {})  # the timelines come from the engine's own book instead


@dataclass(slots=True)
class Booked:
    """One placed request's hold: its window, devices (own keys), claims and what it counts for."""

    start: int
    end: int
    pks: frozenset[int]
    claims: tuple[tuple[str, str, int], ...]  # node, resource, amount
    spot: bool
    tenant: str
    gpus: float  # whole-GPU equivalents: a slice counts its share of its GPU


@dataclass
class Side:
    """What one side of a run did: each request's fate, the bookings, the preemptions."""

    requests: int = 0
    at_once: int = 0
    waits: list[int] = field(default_factory=list)  # ms, of every placed request
    never: int = 0
    preemptions: int = 0
    bookings: list[Booked] = field(default_factory=list)
    tenants: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )
    tenant_waits: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))


class Book:
    """The run's bookings that have not ended by the simulated clock, and the rest set aside.

    `by_device` holds each device's live bookings and `version` counts changes per node, so the
    earliest-start search can keep a node's timeline until something on the node changes.
    """

    def __init__(self, device_node: dict[int, str]) -> None:
        self.live: list[Booked] = []
        self.done: list[Booked] = []
        self.by_device: dict[int, list[Booked]] = defaultdict(list)
        self.version: dict[str, int] = defaultdict(int)
        self.device_node = device_node
        self.claims = False  # whether any booking claims a scalar

    def add(self, booked: Booked) -> None:
        self.live.append(booked)
        self.claims = self.claims or bool(booked.claims)
        for pk in booked.pks:
            self.by_device[pk].append(booked)
        self.touched(booked)

    def touched(self, booked: Booked) -> None:
        """Note that the booking's nodes changed (it was added, cut short or set aside)."""
        for node in {self.device_node[pk] for pk in booked.pks}:
            self.version[node] += 1

    def sweep(self, now: int) -> None:
        """Set aside what ended by `now`: no later request's window can reach back before its arrival."""
        keep = []
        for b in self.live:
            if b.end > now:
                keep.append(b)
                continue
            self.done.append(b)
            for pk in b.pks:
                self.by_device[pk].remove(b)
            self.touched(b)
        self.live = keep

    def overlapping(self, window: Window) -> list[Booked]:
        start, end = window.start, window.end
        return [b for b in self.live if b.start < end and b.end > start]

    def all(self) -> list[Booked]:
        return self.done + self.live


class Engine:
    """One side of a run: the pool's index (changed or not), the settings, and its book."""

    def __init__(self, pool: PoolRow, index: PoolIndex, config: PlacerConfig, horizon_ms: int):
        self.pool, self.index, self.config, self.horizon = pool, index, config, horizon_ms
        self.book = Book(index.device_node)
        self.side = Side()
        self.times: dict[str, tuple[int, NodeTime]] = {}  # node -> (its book version, timeline)
        self.names = [v.id for v in index.nodes.views]
        self.gpu_share = _gpu_shares(index)
        # Seconds spent planning at the requested window, over spot work, and searching later starts.
        self.seconds: dict[str, float] = defaultdict(float)

    def run(self, arrivals: Iterable[Arrival], progress: Callable[[int], None] | None = None) -> Side:
        """Place every arrival in order; return what happened."""
        for number, arrival in enumerate(arrivals, 1):
            if number % GC_EVERY == 0:
                self.book.sweep(arrival.at)
            self.place(arrival.request)
            if progress is not None:
                progress(number)
        self.side.bookings = self.book.all()
        return self.side

    def place(self, request: PlacementRequest) -> None:
        """Book the request at its window, over spot work, or at its earliest start; or count it never placed."""
        side = self.side
        side.requests += 1
        tenant = request.tenant_id
        side.tenants[tenant]["requests"] += 1
        planner = Planner(self.pool, self.config)
        clock = time.perf_counter()
        plan = self.plan_at(request, planner)
        self.seconds["plan"] += time.perf_counter() - clock
        if plan is not None:
            side.at_once += 1
            self._book(request, plan, request.during, 0)
            return
        if request.priority == "regular" and any(b.spot for b in self.book.overlapping(request.during)):
            clock = time.perf_counter()
            plan = self.plan_at(request, planner, without_spot=True)
            self.seconds["preempt"] += time.perf_counter() - clock
            if plan is not None:
                self._preempt(request, plan)
                side.at_once += 1
                self._book(request, plan, request.during, 0)
                return
        clock = time.perf_counter()
        found = self.earliest(request, planner)
        self.seconds["earliest"] += time.perf_counter() - clock
        if found is None:
            side.never += 1
            side.tenants[tenant]["never"] += 1
            return
        window, plan = found
        self._book(request, plan, window, window.start - request.during.start)

    def plan_at(self, request: PlacementRequest, planner: Planner, without_spot: bool = False) -> Plan | None:
        """Return the placer's plan for the request's own window when it fits there."""
        window = request.during
        booked = [b for b in self.book.overlapping(window) if not (without_spot and b.spot)]
        taken: set[int] = set()
        for b in booked:
            taken.update(b.pks)
        self.index.tie_into(taken)
        held: dict[str, dict[str, list[tuple[int, int, int]]]] = defaultdict(lambda: defaultdict(list))
        for b in booked:
            for node, resource, amount in b.claims:
                held[node][resource].append((b.start, b.end, amount))
        used = WindowUse(held, window, request.resources)
        bound = planner.bind(request)
        if request.lease:
            free = self._untouched(taken, held)
            result = plan_lease(request, [self.index.by_name[n] for n in free], self.pool.view, {})
            return result if result.fits else None
        if uses_shortlist(request, self.config):
            short = Short(self.index, request.resources, used)
            found = plan_shortlist(request, self.pool, self.config, self.index, taken, short, used, bound)
            return found[0] if found is not None else None
        result = bound(views_for(self.index, self.names, taken, used), self.index.memo())
        return result if result.fits else None

    def earliest(self, request: PlacementRequest, planner: Planner) -> tuple[Window, Plan] | None:
        """Return the earliest window within the horizon at which the request fits, and its plan."""
        start = request.during.start
        latest = start + self.horizon
        plain = not request.resources and not request.lease and not self.book.claims
        plain = plain and (request.gang is None or request.gang.topology_key is None)
        if plain:
            # Only atoms matter: each node's timeline is kept until a booking on it changes.
            return earliest_in(
                request,
                self.pool,
                self.config,
                self.index,
                _NO_HORIZON,
                latest,
                planner,
                lambda names: self.timelines(request, names),
            )
        claims = [(n, r, b.start, b.end, a) for b in self.book.live for n, r, a in b.claims]
        horizon = horizon_of(self.index, self._spans(self.book.by_device), claims)
        return earliest_in(request, self.pool, self.config, self.index, horizon, latest, planner)

    def timelines(self, request: PlacementRequest, names: Sequence[str]) -> dict[str, NodeTime]:
        """Return the nodes' timelines for a request that claims no scalar and needs no gang key.

        Such a timeline depends on the node's bookings only, so it is kept until they change.
        """
        out = {}
        for name in names:
            version = self.book.version[name]
            kept = self.times.get(name)
            if kept is None or kept[0] != version:
                horizon = horizon_of(self.index, self._spans(self.index.node_devices[name]), [])
                kept = self.times[name] = (version, node_times(request, self.index, horizon, [name])[name])
            out[name] = kept[1]
        return out

    def _spans(self, pks: Iterable[int]) -> dict[int, list[tuple[int, int]]]:
        """Return these devices' live booked spans; a spot booking preemption cut to nothing holds none."""
        by_device = self.book.by_device
        return {
            pk: spans
            for pk in pks
            if (spans := [(b.start, b.end) for b in by_device.get(pk, ()) if b.end > b.start])
        }

    def _untouched(self, taken: set[int], held) -> list[str]:
        nodes = self.index.node_devices
        return [n for n in self.names if taken.isdisjoint(nodes[n]) and not held.get(n)]

    def _preempt(self, request: PlacementRequest, plan: Plan) -> None:
        """End the spot bookings on the plan's nodes that overlap the request, at its start."""
        chosen = plan.gang or (plan.choice,)
        pks: set[int] = set()
        device_pk = self.index.nodes.device_pk
        for member in chosen:
            if member is None:
                continue
            pks.update(device_pk[a] for group in member.atoms for a in group)
        self.index.tie_into(pks)
        nodes = {m.node_id for m in chosen if m is not None}
        start = request.during.start
        for b in self.book.overlapping(request.during):
            if b.spot and (not b.pks.isdisjoint(pks) or any(node in nodes for node, _, _ in b.claims)):
                self.side.preemptions += 1
                b.end = max(b.start, start)  # a victim that had not begun is gone (length 0)
                self.book.touched(b)

    def _book(self, request: PlacementRequest, plan: Plan, window: Window, waited: int) -> None:
        members = [m for m in (plan.gang or (plan.choice,)) if m is not None]
        device_pk = self.index.nodes.device_pk
        pks = frozenset(device_pk[a] for m in members for group in m.atoms for a in group)
        claims = tuple((m.node_id, r, n) for m in members for r, n in request.resources.items() if n > 0)
        gpus = sum(self.gpu_share.get(pk, 0.0) for pk in pks)
        booked = Booked(
            window.start, window.end, pks, claims, request.priority == "spot", request.tenant_id, gpus
        )
        self.book.add(booked)
        side = self.side
        side.waits.append(waited)
        side.tenant_waits[request.tenant_id].append(waited)
        side.tenants[request.tenant_id]["placed"] += 1


def _gpu_shares(index: PoolIndex) -> dict[int, float]:
    """Return each bookable device's share of a whole GPU: 1 for a GPU, 1/n for one of its n slices."""
    shares = {}
    for pk in index.device_class:
        parent = index.parent.get(pk)
        shares[pk] = 1.0 / len(index.children[parent]) if parent is not None else 1.0
    return shares


def gpu_totals(index: PoolIndex) -> dict[str, float]:
    """Return each node's whole-GPU equivalents (healthy, bookable)."""
    shares = _gpu_shares(index)
    totals: dict[str, float] = defaultdict(float)
    for pk, share in shares.items():
        totals[index.device_node[pk]] += share
    return dict(totals)


def free_over_time(
    index: PoolIndex, bookings: Sequence[Booked], start: int, end: int, points: int
) -> list[tuple[int, float, float]]:
    """Return (time, free GPUs, the most free GPUs on one node) at `points` instants in [start, end)."""
    if end <= start or points <= 0:
        return []
    step = max(1, (end - start) // points)
    times = [start + i * step for i in range(points)]
    totals = gpu_totals(index)
    node_of = index.device_node
    shares = _gpu_shares(index)
    events: list[tuple[int, int, int]] = []  # (time, +1 start / -1 end, booking number)
    for number, b in enumerate(bookings):
        if b.end > b.start:
            events.append((b.start, 1, number))
            events.append((b.end, -1, number))
    events.sort(key=lambda e: (e[0], e[1]))  # ends before starts at one instant
    used: dict[str, float] = defaultdict(float)
    out = []
    cursor = 0
    for t in times:
        while cursor < len(events) and events[cursor][0] <= t:
            _, sign, number = events[cursor]
            for pk in bookings[number].pks:
                if pk in shares:
                    used[node_of[pk]] += sign * shares[pk]
            cursor += 1
        free = {n: totals[n] - used.get(n, 0.0) for n in totals}
        out.append((t, round(sum(free.values()), 3), round(max(free.values(), default=0.0), 3)))
    return out


def span_of(arrivals: Sequence[Arrival], bookings: Iterable[Booked]) -> tuple[int, int]:
    """Return the run's span: from the first arrival (or booked start) to the last booking's end, an hour at least."""
    bookings = list(bookings)
    start = min([a.at for a in arrivals] + [b.start for b in bookings], default=0)
    end = max((b.end for b in bookings), default=start)
    return start, max(end, start + HOUR)


def replace_config(config: PlacerConfig, weights, top_n, placer) -> PlacerConfig:
    """Return the settings with a run's changes to weights, top N and placer."""
    changes = {}
    if weights:
        changes["weights"] = {**(config.weights or {}), **weights}
    if top_n is not None:
        changes["top_n"] = top_n
    if placer:
        changes["placer"] = placer
    return dataclasses.replace(config, **changes) if changes else config
