"""Preview: the placement pipeline without the commit, with what would preempt, hints and the earliest window."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from capacity import rules
from capacity.access import EVERYONE, Scope, visible_reservations
from capacity.models import Reservation
from capacity.placement import Plan, Window
from capacity.placers.lease_reads import plan_lease_now
from capacity.placers.planning import Planner
from capacity.placers.preempt import find_lease_preemption, find_preemption
from capacity.placers.reads import plan_request
from capacity.placers.types import PlacerConfig

from .hints import Alternatives, alternatives, smaller_hints
from .prepare import prepare
from .satisfiable import never_fits

MAX_PREVIEW_CANDIDATES = 10


@dataclass
class Preview:
    """What a placement would do now: up to 10 candidates best first, or why nothing fits."""

    fits: bool
    candidates: list[dict]
    reason: str
    plan: Plan
    # For a regular request that fits only by preempting spot work: {"reservations": [the caller's
    # ids], "others": how many of other tenants, "nodes": [node ids], "startsAt": datetime}.
    preemptible: dict | None = None
    # When it does not fit: alternatives that would (best first), or why no node ever could.
    hints: list[str] = dataclasses.field(default_factory=list)
    unsatisfiable: str | None = None
    # The earliest window within 14 days that fits, and the node(s) it would take (the first hint's).
    earliest: tuple[Window, list[str]] | None = None
    no_start: str = ""  # "no start fits before …" when the 14 days were searched in vain


def preview(
    data: Mapping[str, Any],
    *,
    scope: Scope = EVERYONE,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
    node_labels: Mapping[str, str] | None = None,
    explain: bool = False,
) -> Preview:
    """Run the placement pipeline without the commit; checks neither quota nor policy.

    The idempotency key is validated but never stored. With `explain` every node of the pool is
    planned, so the plan lists every rejected node; otherwise the shortlist may answer.
    """
    prepared = prepare(data, scope=scope, now=now, config=config, node_labels=node_labels)
    request, pool_row, config = prepared.request, prepared.pool, prepared.config
    built = None if request.lease else Planner.of(request, pool_row, config)
    if request.lease:
        plan, _static = plan_lease_now(request, pool_row)
    else:
        plan, _index = plan_request(
            request,
            pool_row,
            dataclasses.replace(config, random=None),
            shortlist=False if explain else None,
            protect=MAX_PREVIEW_CANDIDATES,
            built=built,
        )
    candidates = [
        {
            "nodeId": r.node_id,
            "atoms": [a for group in r.atoms for a in group],
            "score": round(r.score, 6),
            "scores": {k: round(v, 6) for k, v in r.scores.items()},
        }
        for r in (plan.gang or plan.ranked)[:MAX_PREVIEW_CANDIDATES]
    ]
    preemptible = None
    # With the pool's spotNotice, spot work is taken no sooner than the notice: the request would
    # start then (a NOTICE rule: policy.notice), which `startsAt` says.
    noticed = None
    if not plan.fits and request.priority == "regular":
        notice = rules.notice(pool_row)
        noticed = notice.start(request, now or timezone.now()) if notice else request
    if noticed is not None:
        found = (
            find_lease_preemption(noticed, pool_row)
            if noticed.lease
            else find_preemption(
                noticed, pool_row, Planner.of(request, pool_row, config, built).bind(noticed)
            )
        )
        if found is not None:
            preemptible = {
                **visible_reservations(found.victims, scope),
                "nodes": [m.node_id for m in found.members],
                "startsAt": found.at,
            }
            # In a pool with shares, some may be other tenants' borrowed GPUs, reclaimed for the
            # caller's guarantee: said when there are any.
            reclaims = Reservation.objects.filter(pk__in=found.victims).exclude(priority="spot").count()
            if reclaims:
                preemptible["reclaims"] = reclaims
    found = Alternatives([])
    never = None
    if not plan.fits:
        never = never_fits(request, pool_row, prepared.tenant.pk, config, built=built)
        if never is None:
            found = alternatives(request, pool_row, config, built)
        elif never.field == "count":
            found = Alternatives(smaller_hints(request, pool_row, config, built))
    return Preview(
        fits=plan.fits,
        candidates=candidates if plan.fits else [],
        reason=plan.pending_reason(),
        plan=plan,
        preemptible=preemptible,
        hints=found.hints,
        unsatisfiable=never.message if never is not None else None,
        earliest=found.earliest,
        no_start=found.no_start,
    )
