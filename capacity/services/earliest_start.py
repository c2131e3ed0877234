"""When could this run: the earliest start at which a request's whole window fits."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from capacity.access import EVERYONE, Scope
from capacity.db.literals import to_datetime
from capacity.placement import ARCHIVED_REASON, INVALID_INPUT, CapacityError, Plan, Window
from capacity.placers.horizon_reads import find_earliest, plan_if_it_fits
from capacity.placers.planning import Planner
from capacity.placers.types import PlacerConfig

from .hints import no_start_before
from .inputs import parse_duration
from .prepare import Prepared, prepare
from .satisfiable import NeverFits, never_fits

DEFAULT_HORIZON = timedelta(days=14)
MAX_HORIZON = timedelta(days=90)


@dataclass
class Earliest:
    """The earliest window that fits within the horizon and the plan for it, or why none does."""

    fits: bool
    window: Window | None
    plan: Plan | None
    reason: str
    horizon: timedelta
    candidates: list[dict]

    @property
    def start(self) -> datetime | None:
        """Return the answered start as a datetime."""
        return to_datetime(self.window.start) if self.window else None

    @property
    def end(self) -> datetime | None:
        """Return the answered end as a datetime."""
        return to_datetime(self.window.end) if self.window else None


def parse_horizon(value: object) -> timedelta:
    """Return the horizon a caller gave ("14d", "36h"), at most 90 days; 14 days when not given."""
    if value is None:
        return DEFAULT_HORIZON
    horizon = parse_duration(value, "horizon")
    if horizon > MAX_HORIZON:
        raise CapacityError(INVALID_INPUT, "horizon must be at most 90d")
    return horizon


def earliest(
    data: Mapping[str, Any],
    *,
    scope: Scope = EVERYONE,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
) -> Earliest:
    """Return the earliest start, from the requested one up to the horizon after it, at which it fits.

    Exact at millisecond precision: the request placed at the answer places (unless something is
    booked meanwhile), and any earlier start within the horizon does not fit. Checks neither quota
    nor admission policy, as preview does.
    """
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be an object")
    horizon = parse_horizon(data.get("horizon"))
    prepared = prepare(data, scope=scope, now=now, config=config, ignore=("horizon",))
    request, pool = prepared.request, prepared.pool
    if pool.view.archived:
        return Earliest(False, None, None, ARCHIVED_REASON, horizon, [])
    # One answer per question: no random pick among the best (as hints have it).
    config = dataclasses.replace(prepared.config, random=None)
    built = Planner.of(request, pool, config)
    # Most requests fit at their own start: the placer's own plan answers, no horizon is read.
    plan = plan_if_it_fits(request, pool, config, built)
    window = request.during
    if plan is None:
        why = never_fits(request, pool, prepared.tenant.pk, config, built=built)
        if why is not None:
            return Earliest(False, None, None, why.message, horizon, [])
        latest = request.during.start + int(horizon.total_seconds() * 1000)
        # Never past the pool's maxLeadTime: a window starting later would be refused (POLICY_LIMIT).
        allowed = pool.latest_start(prepared.now)
        if allowed is not None:
            latest = min(latest, allowed)
        found = find_earliest(request, pool, config, latest, built)
        if found is None:
            return Earliest(False, None, None, no_start_before(latest, horizon), horizon, [])
        window, plan = found
    members = plan.gang or plan.ranked
    candidates = [
        {"nodeId": r.node_id, "atoms": [a for group in r.atoms for a in group], "score": round(r.score, 6)}
        for r in members[: (len(plan.gang) if plan.gang else 10)]
    ]
    return Earliest(True, window, plan, "", horizon, candidates)


def never_fits_prepared(prepared: Prepared) -> tuple[NeverFits | None, Planner | None]:
    """Return why a prepared request could never be placed in its pool (or None), and the planner
    that looked, for the create that follows (None: an archived pool, nothing planned)."""
    if prepared.pool.view.archived:
        return None, None
    built = Planner.of(prepared.request, prepared.pool, prepared.config)
    never = never_fits(prepared.request, prepared.pool, prepared.tenant.pk, prepared.config, built=built)
    return never, built
