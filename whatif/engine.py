"""Place a what-if run's requests in arrival order on an in-memory booking book, with the real planner.

Each request is planned as the placer plans it — the shortlist, the pure planner with the
configured plugins, weights and top N, the spot preemption rule, the earliest start — from a
book of the run's own bookings instead of the database's. A request that fits at its window is
booked there; a regular one that fits only over spot work takes it back (the victims end at its
start); anything else waits until its earliest start within the horizon, or is never placed.
The book, its holds and each side's record are whatif.book's.

Under shares (policy.share_verdict, the rule's own pure verdict) each booking is judged over its window with the run's
bookings: one the shares refuse does not place there and waits as one that does not fit, and one
that borrows records how much. A regular request that stays within its tenant's guarantee and
does not fit takes back other tenants' borrowing bookings, the fewest GPU-hours first, as it takes
back spot work.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from capacity.port import (
    FreeIndex,
    Horizon,
    NodeTime,
    PlacementRequest,
    PlacerConfig,
    Plan,
    Planner,
    PoolIndex,
    PoolRow,
    Short,
    Window,
    WindowUse,
    earliest_in,
    horizon_of,
    node_times,
    plan_lease,
    plan_shortlist,
    uses_shortlist,
    views_for,
)
from inventory.gpu_share import gpu_share
from policy.share_verdict import Share, Verdict, judge, within

from .book import Book, Booked, Side, next_end
from .demand import Arrival
from .figures import gpu_shares

GC_EVERY = 64  # requests between sweeps of ended bookings out of the live book
SHARE_TRIES = 200  # later starts tried for a request the shares refuse before it counts as never placed
_NO_HORIZON = Horizon({}, {})  # the timelines come from the engine's own book instead


class Engine:
    """One side of a run: the pool's index (changed or not), the settings, and its book."""

    def __init__(
        self,
        pool: PoolRow,
        index: PoolIndex,
        config: PlacerConfig,
        horizon_ms: int,
        shares: Mapping[str, Share] | None = None,
    ):
        self.pool, self.index, self.config, self.horizon = pool, index, config, horizon_ms
        self.shares = shares  # None: the pool has no shares, nothing is judged
        self.book = Book(index.device_node)
        self.side = Side()
        self.times: dict[str, tuple[int, NodeTime]] = {}  # node -> (its book version, timeline)
        self.free = FreeIndex()  # every node's free atoms over time, for the plain search
        self.names = [v.id for v in index.nodes.views]
        self.gpu_share = gpu_shares(index)
        self.held = {pk: float(gpu_share(c)) for pk, c in index.device_class.items()}
        self.capacity = sum(self.held.values())  # the guarantees are judged against these GPUs
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
        """Book the request at its window, over spot work or borrowed GPUs, or at its earliest start;
        or count it never placed."""
        side = self.side
        side.requests += 1
        tenant = request.tenant_id
        side.tenants[tenant]["requests"] += 1
        planner = Planner(self.pool, self.config)
        clock = time.perf_counter()
        plan = self.plan_at(request, planner)
        self.seconds["plan"] += time.perf_counter() - clock
        if plan is not None:
            verdict = self.judged(request, plan, request.during)
            if verdict.refused is None:
                side.at_once += 1
                self._book(request, plan, request.during, 0, verdict)
                return
        elif request.priority == "regular" and self.take_back(request, planner):
            return
        clock = time.perf_counter()
        found = self.later(request, planner)
        self.seconds["earliest"] += time.perf_counter() - clock
        if found is None:
            side.never += 1
            side.tenants[tenant]["never"] += 1
            return
        window, plan, verdict = found
        self._book(request, plan, window, window.start - request.during.start, verdict)

    def take_back(self, request: PlacementRequest, planner: Planner) -> bool:
        """Book a regular request over spot work, or within its guarantee over other tenants' borrowing.

        Spot work goes first, all of it the plan needs. Borrowing bookings are taken the fewest
        GPU-hours first: the shortest run of them, cheapest first, over which the request fits.
        Return whether it was booked.
        """
        overlapping = self.book.overlapping(request.during)
        if any(b.spot for b in overlapping):
            clock = time.perf_counter()
            plan = self.plan_at(request, planner, without=_spot)
            self.seconds["preempt"] += time.perf_counter() - clock
            if plan is not None and self._over(request, plan, _spot):
                return True
        if self.shares is None:
            return False
        start = request.during.start
        borrowing = sorted(
            (b for b in overlapping if b.borrowed > 0 and not b.spot and b.tenant != request.tenant_id),
            key=lambda b: (b.end - max(b.start, start)) * b.gpus,
        )
        if not borrowing or not self._within(request):
            return False
        clock = time.perf_counter()
        found = self._fewest(request, planner, borrowing)
        self.seconds["reclaim"] += time.perf_counter() - clock
        return found is not None and self._over(request, found[0], found[1])

    def _fewest(self, request, planner, borrowing: list[Booked]) -> tuple[Plan, Callable] | None:
        """Return a plan over the fewest of the `borrowing` bookings (cheapest first), and what it may take."""

        def taking(count: int) -> Callable[[Booked], bool]:
            ids = {id(b) for b in borrowing[:count]}
            return lambda b: b.spot or id(b) in ids

        best = self.plan_at(request, planner, without=taking(len(borrowing)))
        if best is None:
            return None
        low, high = 0, len(borrowing)  # `high` bookings are enough, `low` are not (or none)
        found = best, taking(high)
        while high - low > 1:
            middle = (low + high) // 2
            plan = self.plan_at(request, planner, without=taking(middle))
            if plan is not None:
                high, found = middle, (plan, taking(middle))
            else:
                low = middle
        return found

    def _over(self, request: PlacementRequest, plan: Plan, may_take: Callable[[Booked], bool]) -> bool:
        """Book the request on the plan over the bookings it needs that it may take; False if the shares refuse."""
        victims = self._victims(request, plan, may_take)
        verdict = self.judged(request, plan, request.during, victims)
        if verdict.refused is not None:
            return False
        start = request.during.start
        for b in victims:
            if b.spot:
                self.side.preemptions += 1
            else:
                self.side.reclaims += 1
                self.side.tenants[b.tenant]["reclaims"] += 1
            b.end = max(b.start, start)  # a victim that had not begun is gone (length 0)
            self.book.touched(b)
        self.side.at_once += 1
        self._book(request, plan, request.during, 0, verdict)
        return True

    def later(self, request: PlacementRequest, planner: Planner) -> tuple[Window, Plan, Verdict] | None:
        """Return the earliest window within the horizon at which the request fits and the shares allow it.

        A window the shares refuse is tried again from the next instant a booking ends: one that
        starts only adds to what is held and never turns a refusal into a yes.
        """
        latest = request.during.start + self.horizon
        length = request.during.end - request.during.start
        found = self.earliest(request, planner, latest)
        for _ in range(SHARE_TRIES):
            if found is None:
                return None
            window, plan = found
            verdict = self.judged(request, plan, window)
            if verdict.refused is None:
                return window, plan, verdict
            after = next_end(self.book.live, window.start)
            if after is None or after > latest:
                return None
            moved = dataclasses.replace(request, during=Window(after, after + length))
            found = self.earliest(moved, planner, latest)
        return None

    def judged(
        self, request: PlacementRequest, plan: Plan, window: Window, victims: Sequence[Booked] = ()
    ) -> Verdict:
        """Return the shares' verdict on the request booked on the plan over the window (victims ended)."""
        if self.shares is None:
            return Verdict()
        gone = {id(b) for b in victims}
        gpus = sum(self.held.get(pk, 0.0) for pk in self._pks(plan))
        holds = [
            (b.tenant, b.start, b.end, b.held)
            for b in self.book.overlapping(window)
            if b.end > b.start and id(b) not in gone
        ]
        holds.append((request.tenant_id, window.start, window.end, gpus))
        return judge(request.tenant_id, gpus, (window.start, window.end), holds, self.shares, self.capacity)

    def _within(self, request: PlacementRequest) -> bool:
        """Return whether the request keeps its tenant within its guarantee over its window."""
        gpus = requested_gpus(request)
        if gpus is None or self.shares is None:
            return False
        window = request.during
        holds = [(b.tenant, b.start, b.end, b.held) for b in self.book.overlapping(window) if b.end > b.start]
        return within(request.tenant_id, gpus, (window.start, window.end), holds, self.shares)

    def plan_at(
        self, request: PlacementRequest, planner: Planner, without: Callable[[Booked], bool] | None = None
    ) -> Plan | None:
        """Return the placer's plan for the request's own window when it fits there (without the
        bookings `without` picks)."""
        window = request.during
        booked = [b for b in self.book.overlapping(window) if without is None or not without(b)]
        # One union in C: under contention thousands of bookings overlap the window.
        taken: set[int] = set().union(*[b.pks for b in booked])
        self.index.tie_into(taken)
        held: dict[str, dict[str, list[tuple[int, int, int]]]] = defaultdict(lambda: defaultdict(list))
        for b in booked if self.book.claims else ():
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

    def earliest(
        self, request: PlacementRequest, planner: Planner, latest: int | None = None
    ) -> tuple[Window, Plan] | None:
        """Return the earliest window from the request's start to `latest` (its start and the horizon)
        at which it fits, and its plan."""
        if latest is None:
            latest = request.during.start + self.horizon
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
                self._fresh(request).earliest,
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

    def _fresh(self, request: PlacementRequest) -> FreeIndex:
        """Return the free index with every node changed since the last search read again.

        Nodes that only lost bookings ended by `swept_to` are read again only for a search that
        starts before then: from then on, those bookings hold nothing and end nothing it walks.
        """
        book, free = self.book, self.free
        if not free.profiles or request.during.start < book.swept_to:
            stale: Iterable[str] = self.names if not free.profiles else book.changed | book.swept
            book.swept = set()
        else:
            stale = book.changed
        for name in stale:
            free.update(name, self.timelines(request, [name])[name])
        book.changed = set()
        return free

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

    def _pks(self, plan: Plan) -> frozenset[int]:
        """Return the plan's devices (own keys)."""
        device_pk = self.index.nodes.device_pk
        members = [m for m in (plan.gang or (plan.choice,)) if m is not None]
        return frozenset(device_pk[a] for m in members for group in m.atoms for a in group)

    def _victims(
        self, request: PlacementRequest, plan: Plan, may_take: Callable[[Booked], bool]
    ) -> list[Booked]:
        """Return the bookings `may_take` picks that overlap the request on the plan's devices or nodes."""
        chosen = plan.gang or (plan.choice,)
        pks = set(self._pks(plan))
        self.index.tie_into(pks)
        nodes = {m.node_id for m in chosen if m is not None}
        return [
            b
            for b in self.book.overlapping(request.during)
            if may_take(b) and (not b.pks.isdisjoint(pks) or any(node in nodes for node, _, _ in b.claims))
        ]

    def _book(
        self, request: PlacementRequest, plan: Plan, window: Window, waited: int, verdict: Verdict
    ) -> None:
        members = [m for m in (plan.gang or (plan.choice,)) if m is not None]
        pks = self._pks(plan)
        claims = tuple((m.node_id, r, n) for m in members for r, n in request.resources.items() if n > 0)
        gpus = sum(self.gpu_share.get(pk, 0.0) for pk in pks)
        booked = Booked(
            window.start,
            window.end,
            pks,
            claims,
            request.priority == "spot",
            request.tenant_id,
            gpus,
            sum(self.held.get(pk, 0.0) for pk in pks),
            verdict.borrowed,
        )
        self.book.add(booked)
        side = self.side
        side.waits.append(waited)
        side.tenant_waits[request.tenant_id].append(waited)
        side.tenants[request.tenant_id]["placed"] += 1


def _spot(booked: Booked) -> bool:
    return booked.spot


def requested_gpus(request: PlacementRequest) -> float | None:
    """Return the whole-GPU equivalents a request asks for; None for a lease (its node decides)."""
    if request.lease or not request.devices:
        return None
    each = sum(float(gpu_share(d.device_class)) * d.count for d in request.devices)
    return each * (request.gang.size if request.gang is not None else 1)
