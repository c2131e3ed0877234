"""Hints: short, concrete alternatives to a request that does not fit now, from the same pipeline.

Each hint is the request changed in one way and planned again: later ("fits from 2026-12-04T10:00Z
on n5"), smaller ("fits with 8 gpu on 19 nodes"), without its NVLink constraint, or without one
selector expression. The first is the best.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from capacity.placement import PlacementRequest, Window, format_selector
from capacity.placement.reasons import nodes_phrase
from capacity.placers.horizon_reads import find_earliest
from capacity.placers.index import PoolIndex, Used, pool_index, views_for
from capacity.placers.lease_reads import iso_minute
from capacity.placers.loader import PoolRow
from capacity.placers.planning import Planner
from capacity.placers.reads import plan_reads
from capacity.placers.types import PlacerConfig

# How far ahead "fits from" looks, and how many smaller counts are tried.
HINT_HORIZON = timedelta(days=14)
MAX_SMALLER_TRIES = 3


@dataclasses.dataclass
class Alternatives:
    """The hints, best first, and the earliest window found for the first ("fits from …"), if any.

    `earliest` holds that window and the node(s) the placer would take then: the preview page shows
    it with a button instead of searching the horizon a second time.
    """

    hints: list[str]
    earliest: tuple[Window, list[str]] | None = None
    no_start: str = ""  # why there is no earliest window ("no start fits before …"), when searched


def alternatives(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, built: Planner | None = None
) -> Alternatives:
    """Return the hints for a request that does not fit now (none for leases), and its earliest window."""
    if pool.view.archived or request.lease:
        return Alternatives([])
    config = dataclasses.replace(config, random=None)
    built = Planner.of(request, pool, config, built)
    latest = request.during.start + int(HINT_HORIZON.total_seconds() * 1000)
    allowed = pool.latest_start(timezone.now())  # never a start past maxLeadTime
    if allowed is not None:
        latest = min(latest, allowed)
    earliest = _earliest(request, pool, config, latest, built)
    found = [f"fits from {iso_minute(earliest[0].start)} on {', '.join(earliest[1])}"] if earliest else []
    now = _Now.read(request, pool, built)
    found.extend(
        hint
        for make in (_smaller, _without_nvlink, *_without_selectors(request))
        if (hint := make(request, now)) is not None
    )
    return Alternatives(found, earliest, "" if earliest else no_start_before(latest, HINT_HORIZON))


def smaller_hints(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, built: Planner | None = None
) -> list[str]:
    """Return the hint for a request larger than any node ("fits with 8 gpu on 3 nodes"), or none.

    For a request that never fits by its count, the one alternative worth offering is a smaller one.
    """
    if pool.view.archived or request.lease:
        return []
    config = dataclasses.replace(config, random=None)
    hint = _smaller(request, _Now.read(request, pool, Planner.of(request, pool, config, built)))
    return [hint] if hint is not None else []


def hints(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, built: Planner | None = None
) -> list[str]:
    """Return the hints for a request that does not fit now, best first."""
    return alternatives(request, pool, config, built).hints


@dataclasses.dataclass
class _Now:
    """The request's window as every "now" hint plans it: read once (one query), planned many times."""

    planner: Planner
    index: PoolIndex
    taken: set[int]
    used: Used

    @classmethod
    def read(cls, request: PlacementRequest, pool: PoolRow, built: Planner) -> _Now:
        index = pool_index(pool)
        taken, _short, used = plan_reads(index, request.during, request.resources)
        return cls(built, index, taken, used)

    def fitting(self, request: PlacementRequest) -> int:
        """Return how many nodes (or a gang's members) could take a variant of the request now."""
        views = views_for(self.index, [v.id for v in self.index.nodes.views], self.taken, self.used)
        plan = self.planner.bind(request)(views, self.index.memo())
        if not plan.fits:
            return 0
        return len(plan.gang) if plan.gang else len(plan.ranked)


def horizon_text(horizon: timedelta) -> str:
    """Return a horizon as the shortest duration text: 14d, 36h, 90m."""
    minutes = int(horizon.total_seconds() // 60)
    if minutes % (24 * 60) == 0:
        return f"{minutes // (24 * 60)}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def no_start_before(latest: int, horizon: timedelta) -> str:
    """Return why no window was found: "no start fits before 2026-12-03T20:00Z (horizon 36h)"."""
    return f"no start fits before {iso_minute(latest)} (horizon {horizon_text(horizon)})"


def _earliest(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, latest: int, built: Planner
) -> tuple[Window, list[str]] | None:
    found = find_earliest(request, pool, config, latest, built)
    if found is None:
        return None
    window, plan = found
    return window, [m.node_id for m in (plan.gang or plan.ranked[:1])]


def _smaller(request: PlacementRequest, now: _Now) -> str | None:
    if len(request.devices) != 1 or request.devices[0].count < 2:
        return None
    device = request.devices[0]
    index = now.index
    most = 0  # the most free atoms of the class on any one node: no smaller count beyond it fits
    for devices in index.node_devices.values():
        free = sum(
            1 for pk in devices if index.device_class.get(pk) == device.device_class and pk not in now.taken
        )
        most = max(most, free)
    count = min(device.count - 1, most)
    for tries in range(MAX_SMALLER_TRIES):
        if count - tries < 1:
            break
        smaller = dataclasses.replace(request, devices=(dataclasses.replace(device, count=count - tries),))
        if n := now.fitting(smaller):
            return f"fits with {count - tries} {device.device_class} on {nodes_phrase(n)}"
    return None


def _without_nvlink(request: PlacementRequest, now: _Now) -> str | None:
    if request.topology != "nvlink-all" and not any(d.topology == "nvlink-all" for d in request.devices):
        return None
    relaxed = dataclasses.replace(
        request,
        topology="any",
        devices=tuple(dataclasses.replace(d, topology=None) for d in request.devices),
    )
    if n := now.fitting(relaxed):
        return f"fits without nvlink-all on {nodes_phrase(n)}"
    return None


Hint = Callable[[PlacementRequest, _Now], str | None]


def _without_selectors(request: PlacementRequest) -> list[Hint]:
    """Return one hint maker per selector expression: the request without that expression."""
    makers: list[Hint] = []
    for i, device in enumerate(request.devices):
        for j, expr in enumerate(device.selector):

            def make(req: PlacementRequest, now: _Now, i: int = i, j: int = j, expr=expr) -> str | None:
                devices = list(req.devices)
                kept = devices[i].selector[:j] + devices[i].selector[j + 1 :]
                devices[i] = dataclasses.replace(devices[i], selector=kept)
                if now.fitting(dataclasses.replace(req, devices=tuple(devices))):
                    return f"fits without `{format_selector((expr,))}`"
                return None

            makers.append(make)
    return makers
