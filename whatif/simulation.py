"""What if: replay a pool's demand against its changed copy, side by side. Reads only; writes nothing.

The demand is the reservations created in the pool in a period (their requests, creation times
and windows, as recorded; moved history included) or a seeded synthetic stream. The baseline is
the pool as it is, the changed side the pool with the changes applied; both run the same
arrivals through the same planner with their own random source seeded alike, so the same inputs
give the same answer, byte for byte.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from capacity.port import (
    BUILTIN_SCORERS,
    INVALID_INPUT,
    NOT_FOUND,
    PLACERS,
    AnyReservation,
    CapacityError,
    load_pool,
    placer_config,
    pool_index,
    validate_request,
)
from inventory.gpu_share import gpu_share
from inventory.models import Tenant
from policy.share_verdict import Share

from .changes import Changes, bookable_index, changed_index, left_out, restored
from .demand import HOUR, MINUTE, Arrival, Synthetic, synthetic
from .engine import Engine, Side
from .figures import borrowed_hours, free_over_time, gpu_totals, replace_config, span_of
from .shares import as_shares, check_shares, shares_rows, stored_specs

MAX_REQUESTS = 100_000  # a run's demand, recorded or synthetic
MAX_PERIOD = timedelta(days=366)
MAX_HORIZON_DAYS = 60
MAX_TOP_N = 50
MAX_CHANGES = 100  # --add-nodes and --remove-nodes entries a run may give (each scans the pool)
CURVE_POINTS = 200  # instants of the free-GPU curve
# Each side's figures as the command's table and the page show them, in order.
FIGURES = (
    ("requests", "requests"),
    ("placed", "placed"),
    ("placedAtOnce", "placed at once"),
    ("neverPlaced", "never placed"),
    ("waitP50Minutes", "wait p50 (min)"),
    ("waitP95Minutes", "wait p95 (min)"),
    ("gpuHoursBooked", "GPU-hours booked"),
    ("gpuHoursIdle", "GPU-hours idle"),
    ("preemptions", "preemptions"),
    ("reclaims", "reclaims"),
    ("nodes", "nodes"),
    ("gpus", "GPUs"),
)


@dataclass(frozen=True)
class Inputs:
    """A run's inputs: the pool, its demand (a period or a synthetic spec), the changes and the seed."""

    pool: str
    since: datetime | None = None
    until: datetime | None = None
    synthetic: Synthetic | None = None
    changes: Changes = field(default_factory=Changes)
    seed: int = 1
    horizon_days: int = 14


def check(inputs: Inputs) -> None:
    """Raise INVALID_INPUT for inputs no run should start with, before anything is read."""
    if (inputs.synthetic is None) == (inputs.since is None):
        raise CapacityError(
            INVALID_INPUT, "demand: give a period (--from and --to) or --synthetic N, not both"
        )
    if inputs.synthetic is not None:
        s = inputs.synthetic
        if not 1 <= s.count <= MAX_REQUESTS:
            raise CapacityError(
                INVALID_INPUT, f"--synthetic: from 1 to {MAX_REQUESTS:,} requests, not {s.count:,}"
            )
        if not (0 < s.per_hour <= 100_000 and 0 < s.mean_hours <= 24 * 30):
            raise CapacityError(
                INVALID_INPUT, "--rate and --mean-hours: more than 0 (at most 100,000 and 720)"
            )
        if not (0 <= s.gang_share <= 1 and 0 <= s.spot_share <= 1):
            raise CapacityError(INVALID_INPUT, "--gang-share and --spot-share: from 0 to 1")
        if not s.mix or any(n < 1 or n > 64 or w < 0 for n, w in s.mix) or sum(w for _, w in s.mix) <= 0:
            raise CapacityError(INVALID_INPUT, "--mix: GPUS:SHARE pairs such as 1:40,8:15 (1 to 64 GPUs)")
    else:
        if inputs.until is None or inputs.until <= inputs.since:
            raise CapacityError(INVALID_INPUT, "--to: after --from")
        if inputs.until - inputs.since > MAX_PERIOD:
            raise CapacityError(INVALID_INPUT, "--from/--to: at most 366 days")
    if not 1 <= inputs.horizon_days <= MAX_HORIZON_DAYS:
        raise CapacityError(INVALID_INPUT, f"--horizon-days: from 1 to {MAX_HORIZON_DAYS}")
    changes = inputs.changes
    if changes.top_n is not None and not 1 <= changes.top_n <= MAX_TOP_N:
        raise CapacityError(INVALID_INPUT, f"--top-n: from 1 to {MAX_TOP_N}")
    if changes.placer is not None and changes.placer not in PLACERS:
        raise CapacityError(INVALID_INPUT, f"--placer: one of {', '.join(PLACERS)}")
    if max(len(changes.add), len(changes.remove), len(changes.restore)) > MAX_CHANGES:
        raise CapacityError(
            INVALID_INPUT, f"--add-nodes, --remove-nodes, --restore-nodes: at most {MAX_CHANGES} of each"
        )
    if any(count < 1 for _, count in changes.add):
        raise CapacityError(INVALID_INPUT, "--add-nodes: SHAPE=COUNT with a count of at least 1")
    for scorer, weight in (changes.weights or {}).items():
        if scorer not in known_scorers():
            raise CapacityError(
                INVALID_INPUT,
                f"--weights: no scorer {scorer!r} (known: {', '.join(sorted(known_scorers()))})",
            )
        if not (isinstance(weight, int | float) and math.isfinite(weight) and weight >= 0):
            raise CapacityError(INVALID_INPUT, f"--weights: {scorer}'s weight must be a number of at least 0")


def known_scorers() -> set[str]:
    """Return the ids of the built-in scorers and of the configured plugins' scorers."""
    return set(BUILTIN_SCORERS) | {s.id for p in placer_config().plugins for s in p.scorers}


def simulate(
    inputs: Inputs, progress: Callable[[str, int, int], None] | None = None, seconds: dict | None = None
) -> dict:
    """Run the baseline and (when changes are asked) the changed pool on the same demand.

    `progress(side, done, total)` is called as requests are placed; `seconds`, when given, gets
    where each side's time went (kept out of the answer, which must not vary between runs).
    Raises CapacityError on bad input (nothing is run then).
    """
    check(inputs)
    pool = load_pool(inputs.pool)
    if pool is None:
        raise CapacityError(NOT_FOUND, f"--pool: no pool {inputs.pool!r}")
    clock = time.perf_counter()
    arrivals = demand(inputs, pool.view.id)
    # Both sides count what someone may book at the run's start (the pool page's bookable figure).
    whole = pool_index(pool)
    baseline = bookable_index(whole, pool.view)
    changes = inputs.changes
    changed = None
    if changes:
        changed = changed_index(whole, pool.view, changes) if changes.inventory() else baseline
    back = restored(whole, pool.view, changes.restore)
    if seconds is not None:
        seconds["load"] = round(time.perf_counter() - clock, 2)
    if changed is not None:
        check_shares(changes.shares, share_capacity(changed))
    # The baseline places under the pool's shares; the changed side under --shares when given.
    base_shares = as_shares(stored_specs(pool.view.id))
    base_config = placer_config()
    horizon = inputs.horizon_days * 24 * HOUR

    def side(name: str, index, config, shares) -> dict:
        config = replace(config, random=random.Random(inputs.seed).random)
        engine = Engine(pool, index, config, horizon, shares)
        clock = time.perf_counter()
        ran = engine.run(arrivals, (lambda n: progress(name, n, len(arrivals))) if progress else None)
        placed = time.perf_counter()
        answer = summary(index, arrivals, ran, shares)
        if seconds is not None:
            seconds[name] = {
                **{k: round(v, 2) for k, v in engine.seconds.items()},
                "place": round(placed - clock, 2),
                "summary": round(time.perf_counter() - placed, 2),
            }
        return answer

    result = {"baseline": side("baseline", baseline, base_config, base_shares), "changed": None}
    if changed is not None:
        result["changed"] = side(
            "changed",
            changed,
            replace_config(base_config, changes.weights, changes.top_n, changes.placer),
            as_shares(changes.shares) if changes.shares else base_shares,
        )
    # The nodes no one may book now: counted on neither side, or brought back on the changed one.
    result["leftOut"] = [
        {"node": name, "why": why} for name, why in left_out(whole, pool.view).items() if name not in back
    ]
    result["restored"] = [{"node": name, "why": why} for name, why in back.items()]
    return result


def demand(inputs: Inputs, pool_slug: str) -> list[Arrival]:
    """Return the run's arrivals in order: recorded in the period, or synthetic."""
    if inputs.synthetic is not None:
        tenants = (
            list(Tenant.objects.filter(pools__slug=pool_slug).order_by("slug").values_list("slug", flat=True))
            or list(Tenant.objects.order_by("slug").values_list("slug", flat=True)[:8])
            or ["whatif"]
        )
        # Simulated time starts at 0: a seed's output cannot depend on when it was run.
        return synthetic(inputs.synthetic, pool_slug, tenants, 0)
    rows = (
        AnyReservation.objects.filter(
            pool__slug=pool_slug, created_at__gte=inputs.since, created_at__lt=inputs.until
        )
        .order_by("created_at", "id")
        .values_list("id", "created_at", "request")[: MAX_REQUESTS + 1]
    )
    found = list(rows)
    if not found:
        raise CapacityError(
            INVALID_INPUT,
            f"--from/--to: no reservation was created in {pool_slug} between "
            f"{inputs.since:%Y-%m-%d %H:%M} and {inputs.until:%Y-%m-%d %H:%M} UTC",
        )
    if len(found) > MAX_REQUESTS:
        raise CapacityError(
            INVALID_INPUT, f"--from/--to: more than {MAX_REQUESTS:,} reservations: take a shorter period"
        )
    return [
        Arrival(
            int(created.timestamp() * 1000),
            validate_request({**request["placement"], "reservationId": str(pk)}),
        )
        for pk, created, request in found
    ]


def share_capacity(index) -> float:
    """Return the GPUs a side's guarantees are judged against (a MIG slice its share, inventory.gpu_share)."""
    return sum(float(gpu_share(c)) for c in index.device_class.values())


def summary(index, arrivals: list[Arrival], side: Side, shares: Mapping[str, Share] | None = None) -> dict:
    """Return one side's figures: fates, waits, GPU-hours booked and idle, preemptions and reclaims,
    the curve, tenants (with what each borrowed and had reclaimed under shares)."""
    bookings = side.bookings
    start, end = span_of(arrivals, bookings)
    totals = gpu_totals(index)
    gpus = sum(totals.values())
    booked = sum((b.end - b.start) / HOUR * b.gpus for b in bookings if b.end > b.start)
    curve = free_over_time(index, bookings, start, end, CURVE_POINTS)
    waits = sorted(side.waits)
    tenants = []
    for tenant in sorted(side.tenants):
        counts = side.tenants[tenant]
        own = sorted(side.tenant_waits.get(tenant, []))
        mine = [b for b in bookings if b.tenant == tenant and b.end > b.start]
        share = (shares or {}).get(tenant)
        tenants.append(
            {
                "tenant": tenant,
                "requests": int(counts["requests"]),
                "placed": int(counts["placed"]),
                "neverPlaced": int(counts["never"]),
                "waitP50Minutes": _minutes(_pct(own, 50)),
                "waitP95Minutes": _minutes(_pct(own, 95)),
                "gpuHours": round(sum((b.end - b.start) / HOUR * b.gpus for b in mine), 1),
                # Under shares: its guarantee (0 without a row), its bookings others took back, and
                # the GPU-hours it held past its guarantee (instant by instant, summed).
                "guaranteedGpus": None if shares is None else int(share.guaranteed) if share else 0,
                "reclaims": int(counts["reclaims"]),
                "gpuHoursBorrowed": 0.0
                if shares is None
                else round(borrowed_hours(mine, share.guaranteed if share else 0.0), 1),
            }
        )
    return {
        "requests": side.requests,
        "placed": len(waits),
        "placedAtOnce": side.at_once,
        "neverPlaced": side.never,
        "waitP50Minutes": _minutes(_pct(waits, 50)),
        "waitP95Minutes": _minutes(_pct(waits, 95)),
        "gpuHoursBooked": round(booked, 1),
        "gpuHoursIdle": round(max(0.0, gpus * (end - start) / HOUR - booked), 1),
        "preemptions": side.preemptions,
        "reclaims": side.reclaims,
        "shares": shares_rows(shares),
        "waitHistogram": histogram(waits, side.never),
        "nodes": len(index.by_name),
        "gpus": round(gpus, 3),
        "start": start,
        "hours": round((end - start) / HOUR, 2),
        # Free GPUs and the most free on one node (fragmentation), hours after `start`.
        "largestFreeBlock": [
            {"hour": round((t - start) / HOUR, 2), "freeGpus": free, "largestFreeBlock": block}
            for t, free, block in curve
        ],
        "tenants": tenants,
    }


# The wait distribution's buckets: (label, the longest wait in minutes it takes; None: the rest).
WAIT_BUCKETS = (
    ("at once", 0),
    ("≤ 15 min", 15),
    ("≤ 1 h", 60),
    ("≤ 4 h", 240),
    ("≤ 12 h", 720),
    ("≤ 1 day", 1440),
    ("> 1 day", None),
)


def histogram(waits: list[int], never: int) -> list[dict]:
    """Return how many placed requests waited how long, bucket by bucket, then those never placed."""
    counts = [0] * len(WAIT_BUCKETS)
    for wait in waits:
        minutes = wait / MINUTE
        for number, (_, most) in enumerate(WAIT_BUCKETS):
            if most is None or minutes <= most:
                counts[number] += 1
                break
    rows = [{"bucket": label, "requests": n} for (label, _), n in zip(WAIT_BUCKETS, counts, strict=True)]
    return [*rows, {"bucket": "never placed", "requests": never}]


def parse_add(items: list[str]) -> tuple[tuple[str, int], ...]:
    """Read SHAPE=COUNT items (a node of the pool to copy, how many times)."""
    out = []
    for item in items:
        shape, eq, count = item.strip().rpartition("=")
        if not eq or not shape or not count.isdigit():
            raise CapacityError(INVALID_INPUT, f"--add-nodes: {item.strip()!r} is not SHAPE=COUNT")
        out.append((shape, int(count)))
    return tuple(out)


def parse_mix(text: str) -> tuple[tuple[int, float], ...]:
    """Read GPUS:SHARE pairs, such as 1:40,8:15."""
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        gpus, colon, share = part.partition(":")
        try:
            pairs.append((int(gpus), float(share)))
        except ValueError:
            raise CapacityError(INVALID_INPUT, f"--mix: {part!r} is not GPUS:SHARE") from None
        if not colon:
            raise CapacityError(INVALID_INPUT, f"--mix: {part!r} is not GPUS:SHARE")
    return tuple(pairs)


def _pct(values: list[int], q: int) -> int:
    if not values:
        return 0
    return values[min(len(values) - 1, max(0, math.ceil(q / 100 * len(values)) - 1))]


def _minutes(ms: int) -> float:
    return round(ms / MINUTE, 1)


def parse_weights(text: str) -> Mapping[str, float]:
    """Read `id=w,...` into weights; a malformed pair is INVALID_INPUT."""
    weights = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = pair.partition("=")
        try:
            weights[key.strip()] = float(value)
        except ValueError:
            raise CapacityError(INVALID_INPUT, f"--weights: {pair!r} is not id=weight") from None
        if not eq or not key.strip():
            raise CapacityError(INVALID_INPUT, f"--weights: {pair!r} is not id=weight")
    return weights
