"""plan_placement: the pure pipeline from a request and node views to a ranked plan."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from .eligibility import ineligibility
from .maintenance import WINDOW_FILTER, overlapping, window_reason
from .pick import NV_RANK, PickMemo, default_pick, memo_pick, worst_rank
from .plugins import PickFn, SchedulerPlugin, ScoreFn, check_plugins, filter_verdict
from .result import SCORE_DIGITS, Plan, ranked_plan
from .scorers import (
    BINPACK,
    FRAGMENTATION,
    IMAGE_CACHED,
    PLUGIN_DEFAULT_WEIGHT,
    SPREAD,
    TOPOLOGY,
    binpack_score,
    clamp_score,
    fragmentation_score,
    topology_score,
    weight_for,
)
from .selectors import selector_matches
from .types import (
    ANY_LABEL_VALUE,
    Atom,
    DeviceRequest,
    Expression,
    NodeView,
    PlacementRequest,
    Pool,
    Ranked,
    Rejection,
)

EXCLUDED_FILTER: Final = "excluded"
EXCLUDED_REASON: Final = "excluded by the request"
# A node left out after a lost race on it (spec: planned again without that node).
LOST_RACE_REASON: Final = "taken by a concurrent booking while this one was placed"
LABELS_FILTER: Final = "labels"
FITS_FILTER: Final = "fits"
TOPOLOGY_FILTER: Final = "topology"
INVALID_PICK: Final = "picker returned an invalid allocation"
DEFAULT_TOP_N: Final = 5

RandomFn = Callable[[], float]


@dataclass(frozen=True, slots=True)
class _Device:
    request: DeviceRequest
    device_class: str
    count: int
    selector: tuple[Expression, ...]
    nvlink: bool
    pickers: tuple[tuple[str, PickFn], ...]
    short: str
    topology_reason: str


def _devices(request: PlacementRequest, plugins: Sequence[SchedulerPlugin]) -> tuple[_Device, ...]:
    out = []
    for device in request.devices:
        cls, count = device.device_class, device.count
        pickers = tuple((p.id, k.pick) for p in plugins for k in p.prefer_allocation if k.device_class == cls)
        out.append(
            _Device(
                request=device,
                device_class=cls,
                count=count,
                selector=device.selector,
                nvlink=request.topology_for(device) == "nvlink-all" and count > 1,
                pickers=pickers,
                short=f" of {count} {cls} free" + (" matching the selector" if device.selector else ""),
                topology_reason=f"no {count} {cls} fully connected by NVLink",
            )
        )
    return tuple(out)


def _scorers(
    request: PlacementRequest, plugins: Sequence[SchedulerPlugin], weights: Mapping[str, float] | None
) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, ScoreFn], ...]]:
    builtin = [BINPACK, TOPOLOGY, FRAGMENTATION, SPREAD]
    if request.image_id is not None:
        builtin.append(IMAGE_CACHED)
    weighted = {sid: weight_for(sid, weights) for sid in builtin}
    custom: list[tuple[str, ScoreFn]] = []
    for plugin in plugins:
        for scorer in plugin.scorers:
            # A plugin scorer named like a built-in replaces its score and takes the plugin's weight.
            own = scorer.weight if scorer.weight is not None else PLUGIN_DEFAULT_WEIGHT
            weighted[scorer.id] = weight_for(scorer.id, weights, own)
            custom.append((scorer.id, scorer.score))
    return tuple(weighted.items()), tuple(custom)


def _plugin_pick(answer: object, candidates: Sequence[Atom], device: _Device) -> tuple[Atom, ...] | str:
    count = device.count
    if isinstance(answer, str | bytes) or not isinstance(answer, Sequence):
        return f"{INVALID_PICK}: not a list of atoms"
    if len(answer) != count:
        return f"{INVALID_PICK}: {len(answer)} atoms for {count} {device.device_class}"
    by_id = {a.id: a for a in candidates}
    picked: list[Atom] = []
    seen: set[str] = set()
    for atom in answer:
        if not isinstance(atom, Atom):
            return f"{INVALID_PICK}: not a list of atoms"
        if atom.id in seen:
            return f"{INVALID_PICK}: atom {atom.id} twice"
        if atom.id not in by_id:
            return f"{INVALID_PICK}: atom {atom.id} is not a free candidate"
        seen.add(atom.id)
        picked.append(by_id[atom.id])
    return tuple(picked)


class _Planner:
    """Everything plan_placement derives from the request once, and the per-node pipeline."""

    def __init__(
        self,
        request: PlacementRequest,
        pool: Pool,
        plugins: Sequence[SchedulerPlugin],
        weights: Mapping[str, float] | None,
        image_cached: Collection[str],
        memo: PickMemo | None = None,
    ) -> None:
        self.memo = memo
        self.totals: dict[object, int] = {}  # shape -> healthy, bookable devices of the requested classes
        self.request = request
        self.pool = pool
        self.tenant_id = request.tenant_id
        self.excluded = request.exclude_nodes
        self.lost = request.lost_nodes
        self.start, self.end = request.during.start, request.during.end
        self.labels = tuple(request.node_labels.items())
        # A zero claim takes nothing, so it needs no resource row either.
        self.resources = tuple((name, n) for name, n in request.resources.items() if n > 0)
        self.filters = tuple((f.id, f.filter) for p in plugins for f in p.filters)
        self.devices = _devices(request, plugins)
        self.classes = frozenset(d.device_class for d in self.devices)
        self.single_class = next(iter(self.classes)) if len(self.classes) == 1 else None
        # With one device request and no selector, its candidates are exactly the free atoms binpack counts.
        self.simple = len(self.devices) == 1 and not self.devices[0].selector
        self.picked_total = sum(d.count for d in self.devices)
        self.weights, self.custom = _scorers(request, plugins, weights)
        self.image = request.image_id is not None
        self.image_cached = image_cached

    def evaluate(self, node: NodeView) -> Ranked | Rejection:
        """Run the filters, the atom pick and the scorers for one node."""
        node_id = node.id
        if node_id in self.excluded:
            lost = node_id in self.lost
            return Rejection(node_id, EXCLUDED_FILTER, LOST_RACE_REASON if lost else EXCLUDED_REASON)
        bad = ineligibility(node, self.pool, self.tenant_id)
        if bad is not None:
            return Rejection(node_id, bad.filter, bad.reason)
        if node.windows:
            span = overlapping(node.windows, self.start, self.end)
            if span is not None:
                return Rejection(node_id, WINDOW_FILTER, window_reason(span))
        if self.labels:
            have = node.labels
            for key, want in self.labels:
                value = have.get(key)
                if value is None or (want != ANY_LABEL_VALUE and value != want):
                    return Rejection(node_id, LABELS_FILTER, f"needs label {key}={want}")
        if self.resources:
            rows = node.resources
            for name, amount in self.resources:
                row = rows.get(name)
                if row is None:
                    return Rejection(node_id, FITS_FILTER, f"no {name}")
                room = row.room
                if room < amount:
                    return Rejection(node_id, FITS_FILTER, f"{name}: {amount} requested, {max(room, 0)} free")
        request = self.request
        for filter_id, check in self.filters:
            reason = filter_verdict(check(request, node))
            if reason is not None:
                return Rejection(node_id, filter_id, reason)
        return self._fit(node)

    def _fit(self, node: NodeView) -> Ranked | Rejection:
        node_id = node.id
        free = node.free
        picks: list[tuple[Atom, ...]] = []
        taken: set[str] = set()
        worst = NV_RANK
        first_candidates = 0
        for device in self.devices:
            cls = device.device_class
            candidates = [a for a in free if a.device_class == cls and a.healthy and a.bookable]
            if taken:
                candidates = [a for a in candidates if a.id not in taken]
            if device.selector:
                selector = device.selector
                candidates = [a for a in candidates if selector_matches(selector, a, node)]
            if not picks:
                first_candidates = len(candidates)
            count = device.count
            if len(candidates) < count:
                return Rejection(node_id, FITS_FILTER, f"{len(candidates)}{device.short}")
            chosen: tuple[Atom, ...] | None = None
            for plugin_id, pick in device.pickers:
                answer = pick(device.request, list(candidates), node)
                if answer is None:
                    continue
                checked = _plugin_pick(answer, candidates, device)
                if isinstance(checked, str):
                    return Rejection(node_id, plugin_id, checked)
                chosen, worst = checked, worst_rank(node, checked)
                break
            if chosen is None:
                shape, memo = node.shape, self.memo
                if shape is not None and memo is not None:
                    chosen, worst = memo_pick(candidates, count, node, shape, memo)
                else:
                    chosen, worst = default_pick(candidates, count, node)
            if device.nvlink and worst != NV_RANK:
                return Rejection(node_id, TOPOLOGY_FILTER, device.topology_reason)
            picks.append(chosen)
            if len(self.devices) > 1:
                taken.update(a.id for a in chosen)
        return self._score(node, picks, worst, first_candidates)

    def _score(
        self, node: NodeView, picks: list[tuple[Atom, ...]], worst: int, first_candidates: int
    ) -> Ranked:
        cls = self.single_class
        if self.simple:
            free_count = first_candidates
        elif cls is not None:
            free_count = len([a for a in node.free if a.device_class == cls and a.healthy and a.bookable])
        else:
            classes = self.classes
            free_count = len([a for a in node.free if a.device_class in classes and a.healthy and a.bookable])
        shape = node.shape
        found = self.totals.get(shape) if shape is not None else None
        if found is not None:
            total = found
        else:
            # A GPU split into slices is not an atom: its slices are (spec 001, `free` holds atoms).
            split = {a.parent_id for a in node.devices if a.parent_id is not None}
            classes = frozenset({cls}) if cls is not None else self.classes
            total = len(
                [
                    a
                    for a in node.devices
                    if a.device_class in classes and a.healthy and a.bookable and a.id not in split
                ]
            )
            if shape is not None:
                self.totals[shape] = total  # nodes of one shape have equal devices
        free_after = free_count - self.picked_total
        if len(picks) > 1 and self.picked_total > 1:
            worst = worst_rank(node, [a for chosen in picks for a in chosen])
        binpack = binpack_score(free_after, total)
        scores: dict[str, float] = {
            BINPACK: binpack,
            TOPOLOGY: topology_score(self.picked_total, worst),
            FRAGMENTATION: fragmentation_score(free_after),
            SPREAD: 1.0 - binpack,
        }
        if self.image:
            scores[IMAGE_CACHED] = 1.0 if node.id in self.image_cached else 0.0
        request = self.request
        for scorer_id, score in self.custom:
            scores[scorer_id] = clamp_score(score(request, node))
        total_score = 0.0
        for scorer_id, weight in self.weights:
            total_score += weight * scores[scorer_id]
        return Ranked(
            node.id,
            tuple(tuple(a.id for a in chosen) for chosen in picks),
            scores,
            round(total_score, SCORE_DIGITS),
        )


def _rank_key(ranked: Ranked) -> tuple[float, str]:
    return (-ranked.score, ranked.node_id)


def _choose(ranked: Sequence[Ranked], top_n: int, random: RandomFn | None) -> Ranked | None:
    if not ranked:
        return None
    if random is None:
        return ranked[0]
    span = min(max(top_n, 1), len(ranked))
    return ranked[min(span - 1, max(0, int(random() * span)))]


def plan_placement(
    request: PlacementRequest,
    nodes: Iterable[NodeView],
    pool: Pool,
    *,
    plugins: Iterable[SchedulerPlugin] = (),
    weights: Mapping[str, float] | None = None,
    top_n: int = DEFAULT_TOP_N,
    random: RandomFn | None = None,
    image_cached: Collection[str] = frozenset(),
    memo: PickMemo | None = None,
) -> Plan:
    """Filter, pick atoms on and score every node; return the plan, best first.

    random (a callable returning a float in [0, 1), such as random.Random(seed).random) picks the
    choice among the best top_n; without it the choice is the best node. image_cached holds the ids of
    the nodes whose image cache holds request.image_id. A gang request's choice is its first member.
    memo, a dict the caller keeps, lets nodes that carry an equal `shape` share their default pick.
    """
    views = nodes if isinstance(nodes, Sequence) else tuple(nodes)
    gang = request.gang
    gang_size = gang.size if gang is not None else None
    gang_key = gang.topology_key if gang is not None else None
    if pool.archived:
        return Plan((), (), None, len(views), gang_size=gang_size, gang_topology_key=gang_key, archived=True)
    planner = _Planner(request, pool, check_plugins(plugins), weights, image_cached, memo)
    evaluate = planner.evaluate
    ranked: list[Ranked] = []
    rejected: list[Rejection] = []
    for node in views:
        outcome = evaluate(node)
        if type(outcome) is Ranked:
            ranked.append(outcome)
        else:
            assert isinstance(outcome, Rejection)
            rejected.append(outcome)
    ranked.sort(key=_rank_key)
    return ranked_plan(request, ranked, rejected, views, lambda: _choose(ranked, top_n, random))
