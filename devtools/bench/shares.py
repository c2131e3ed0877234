"""Shares in what if (bench_shares): do tenants get their guarantees, and how fast is a lent share back?

Pool bench-<nodes> (as bench_placements builds it) and its tenants bench-0, bench-1, ... get
guarantees of the given per cents of the pool's GPUs. A seeded synthetic stream (no spot work)
that asks for more than the pool has is placed by the what-if engine, without shares and with
them, and each tenant's GPU-hours in the simulated period are set against its share. Then the
`idle` tenant asks for nothing in the first half: the others borrow its share, and the figures
say how long after its first request it has its first request placed and holds its guarantee.
"""

from __future__ import annotations

import time
from collections import defaultdict

from capacity.conf import placer_config
from capacity.placers.index import pool_index
from capacity.placers.loader import load_pool
from devtools.bench.placements import build_pool
from policy.share_verdict import Share
from whatif.changes import bookable_index
from whatif.demand import HOUR, MINUTE, Arrival, Synthetic, synthetic
from whatif.engine import Booked, Engine, Side


def run_shares(
    nodes: int,
    percents: tuple[int, ...],
    *,
    seed: int = 1,
    per_hour: float = 80.0,
    hours: float = 168.0,
    mean_hours: float = 6.0,
    idle: int = 1,
    progress=None,
) -> dict:
    """Return the figures of the four runs: busy and with tenant `idle` idle for the first half,
    each without shares and with them."""
    pool = build_pool(nodes, len(percents), progress=progress)
    tenants = [f"bench-{i}" for i in range(len(percents))]
    row = load_pool(pool.slug)
    index = bookable_index(pool_index(row), row.view)
    gpus = float(len(index.device_class))
    guaranteed = {t: int(gpus * p // 100) for t, p in zip(tenants, percents, strict=True)}
    shares = {t: Share(float(g)) for t, g in guaranteed.items()}
    spec = Synthetic(
        count=int(per_hour * hours), seed=seed, per_hour=per_hour, mean_hours=mean_hours, spot_share=0
    )
    busy = synthetic(spec, pool.slug, tenants, 0)
    end = int(hours * HOUR)
    half = end // 2
    away = tenants[idle]
    idle_arrivals = [a for a in busy if not (a.request.tenant_id == away and a.at < half)]

    def run(arrivals: list[Arrival], with_shares: bool) -> tuple[Side, float]:
        engine = Engine(row, index, placer_config(), 14 * 24 * HOUR, shares if with_shares else None)
        clock = time.perf_counter()
        side = engine.run(arrivals)
        return side, round(time.perf_counter() - clock, 1)

    out: dict = {
        "nodes": nodes,
        "gpus": gpus,
        "guaranteed": guaranteed,
        "requests": len(busy),
        "perHour": per_hour,
        "hours": hours,
        "seed": seed,
    }
    for name, arrivals in (("busy", busy), ("idle", idle_arrivals)):
        for with_shares in (False, True):
            side, seconds = run(arrivals, with_shares)
            key = f"{name}{'Shares' if with_shares else 'Plain'}"
            figures = {
                "seconds": seconds,
                "requests": side.requests,
                "never": side.never,
                "reclaims": side.reclaims,
                "wholePeriod": per_tenant(side.bookings, tenants, 0, end),
                "tenantWaits": {t: waits(side.tenant_waits.get(t, [])) for t in tenants},
                "reclaimed": {t: int(side.tenants[t]["reclaims"]) for t in tenants},
            }
            if name == "busy":
                figures["afterFirstDay"] = per_tenant(side.bookings, tenants, 24 * HOUR, end)
            else:
                figures["firstHalf"] = per_tenant(side.bookings, tenants, 0, half)
                figures["secondHalf"] = per_tenant(side.bookings, tenants, half, end)
                back = min(a.at for a in arrivals if a.request.tenant_id == away)
                figures["return"] = returned(side, away, guaranteed[away], back)
            out[key] = figures
    return out


def per_tenant(bookings: list[Booked], tenants: list[str], start: int, end: int) -> dict[str, dict]:
    """Return each tenant's GPU-hours held in [start, end) and its per cent of all held then."""
    hours: dict[str, float] = defaultdict(float)
    for b in bookings:
        s, e = max(b.start, start), min(b.end, end)
        if e > s:
            hours[b.tenant] += (e - s) / HOUR * b.gpus
    total = sum(hours.values()) or 1.0
    return {t: {"gpuHours": round(hours[t]), "percent": round(100 * hours[t] / total, 1)} for t in tenants}


def waits(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50Minutes": 0.0, "p95Minutes": 0.0}

    def pct(q: int) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, -(-q * len(ordered) // 100) - 1))] / MINUTE, 1)

    return {"p50Minutes": pct(50), "p95Minutes": pct(95)}


def returned(side: Side, tenant: str, guarantee: int, back: int) -> dict:
    """Return how long after `back` (its first request) the tenant had its first request placed and
    held 90 % of its guarantee, and all of it but one request's worth (8 GPUs)."""
    first_wait = side.tenant_waits[tenant][0] if side.tenant_waits.get(tenant) else None
    events = sorted(
        (t, sign * b.gpus)
        for b in side.bookings
        if b.tenant == tenant and b.end > b.start
        for t, sign in ((b.start, 1), (b.end, -1))
    )
    held, reached = 0.0, {}
    marks = {"ninetyPercentHours": 0.9 * guarantee, "fullHours": guarantee - 8}
    for t, change in events:
        held += change
        for label, level in marks.items():
            if label not in reached and t >= back and held >= level:
                reached[label] = round((t - back) / HOUR, 2)
    return {
        "at": round(back / HOUR, 2),
        "firstRequestWaitMinutes": None if first_wait is None else round(first_wait / MINUTE, 1),
        **{label: reached.get(label) for label in marks},
    }
