"""Demand for a what-if run: requests with their arrival times, recorded or drawn from a seed."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from capacity.port import DeviceRequest, Gang, PlacementRequest, Window

HOUR = 3_600_000
MINUTE = 60_000


@dataclass(frozen=True, slots=True)
class Arrival:
    """One request as it reached the placer: when, and what it asked for (its window included)."""

    at: int  # epoch ms
    request: PlacementRequest


@dataclass(frozen=True)
class Synthetic:
    """How synthetic demand is drawn; every field has the default the command line shows."""

    count: int
    seed: int = 1
    per_hour: float = 20.0  # arrivals, a Poisson process
    mix: tuple[tuple[int, float], ...] = ((1, 0.4), (2, 0.25), (4, 0.2), (8, 0.15))  # GPUs: share
    gang_share: float = 0.05  # of requests: 2 to 4 whole nodes of 8 GPUs
    mean_hours: float = 6.0  # durations are exponential, 1 h to 7 days, in whole quarter hours
    spot_share: float = 0.1
    device_class: str = "gpu"


def synthetic(spec: Synthetic, pool: str, tenants: Sequence[str], start: int) -> list[Arrival]:
    """Return `spec.count` arrivals from `start`: the same spec and seed give the same list."""
    pick = random.Random(spec.seed)
    counts, weights = zip(*spec.mix, strict=True)
    at = start
    out = []
    for number in range(spec.count):
        at += max(1, round(pick.expovariate(spec.per_hour / HOUR)))
        hours = min(7 * 24.0, max(1.0, pick.expovariate(1 / spec.mean_hours)))
        duration = max(15, round(hours * 4) * 15) * MINUTE
        begin = math.ceil(at / MINUTE) * MINUTE
        gang = None
        if pick.random() < spec.gang_share:
            gang, gpus = Gang(pick.choice((2, 3, 4))), 8
        else:
            gpus = pick.choices(counts, weights)[0]
        out.append(
            Arrival(
                at,
                PlacementRequest(
                    tenant_id=tenants[pick.randrange(len(tenants))],
                    pool_id=pool,
                    during=Window(begin, begin + duration),
                    devices=(DeviceRequest(spec.device_class, gpus),),
                    gang=gang,
                    priority="spot" if pick.random() < spec.spot_share else "regular",
                    reservation_id=f"sim-{number + 1}",
                ),
            )
        )
    return out
