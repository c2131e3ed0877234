"""Hints: short, concrete alternatives to a request that does not fit now, from the same pipeline.

Each hint is the request changed in one way and planned again: later ("fits from 2026-12-04T10:00Z
on n5"), smaller ("fits with 8 gpu on 19 nodes"), without its NVLink constraint, or without one
selector expression. The first is the best.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

from capacity.placement import PlacementRequest, format_selector
from capacity.placement.reasons import nodes_phrase
from capacity.placers.earliest import find_earliest
from capacity.placers.index import plan_reads, pool_index
from capacity.placers.inline import PlacerConfig, plan_request
from capacity.placers.lease import iso_minute
from capacity.placers.loader import PoolRow

# How far ahead "fits from" looks, and how many smaller counts are tried.
HINT_HORIZON = timedelta(days=14)
MAX_SMALLER_TRIES = 3


def hints(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> list[str]:
    """Return the hints for a request that does not fit now, best first (none for leases)."""
    if pool.view.archived or request.lease:
        return []
    config = dataclasses.replace(config, random=None)
    found = [
        hint
        for make in (_later, _smaller, _without_nvlink, *_without_selectors(request))
        if (hint := make(request, pool, config)) is not None
    ]
    return found


def _fitting(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> int:
    """Return how many nodes (or gangs' members) could take the request now; 0 when none."""
    plan, _index = plan_request(request, pool, config, shortlist=False)
    if not plan.fits:
        return 0
    return len(plan.gang) if plan.gang else len(plan.ranked)


def _later(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> str | None:
    latest = request.during.start + int(HINT_HORIZON.total_seconds() * 1000)
    found = find_earliest(request, pool, config, latest)
    if found is None:
        return None
    window, plan = found
    members = plan.gang or plan.ranked[:1]
    where = ", ".join(m.node_id for m in members)
    return f"fits from {iso_minute(window.start)} on {where}"


def _smaller(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> str | None:
    if len(request.devices) != 1 or request.devices[0].count < 2:
        return None
    device = request.devices[0]
    index = pool_index(pool)
    taken, _short, _used = plan_reads(pool, index, request.during, request.resources)
    most = 0  # the most free atoms of the class on any one node: no smaller count beyond it fits
    for devices in index.node_devices.values():
        free = sum(
            1 for pk in devices if index.device_class.get(pk) == device.device_class and pk not in taken
        )
        most = max(most, free)
    count = min(device.count - 1, most)
    for tries in range(MAX_SMALLER_TRIES):
        if count - tries < 1:
            break
        smaller = dataclasses.replace(request, devices=(dataclasses.replace(device, count=count - tries),))
        if n := _fitting(smaller, pool, config):
            return f"fits with {count - tries} {device.device_class} on {nodes_phrase(n)}"
    return None


def _without_nvlink(request: PlacementRequest, pool: PoolRow, config: PlacerConfig) -> str | None:
    if request.topology != "nvlink-all" and not any(d.topology == "nvlink-all" for d in request.devices):
        return None
    relaxed = dataclasses.replace(
        request,
        topology="any",
        devices=tuple(dataclasses.replace(d, topology=None) for d in request.devices),
    )
    if n := _fitting(relaxed, pool, config):
        return f"fits without nvlink-all on {nodes_phrase(n)}"
    return None


Hint = Callable[[PlacementRequest, PoolRow, PlacerConfig], str | None]


def _without_selectors(request: PlacementRequest) -> list[Hint]:
    """Return one hint maker per selector expression: the request without that expression."""
    makers: list[Hint] = []
    for i, device in enumerate(request.devices):
        for j, expr in enumerate(device.selector):

            def make(req, pool, config, i=i, j=j, expr=expr) -> str | None:
                devices = list(req.devices)
                kept = devices[i].selector[:j] + devices[i].selector[j + 1 :]
                devices[i] = dataclasses.replace(devices[i], selector=kept)
                if _fitting(dataclasses.replace(req, devices=tuple(devices)), pool, config):
                    return f"fits without `{format_selector((expr,))}`"
                return None

            makers.append(make)
    return makers
