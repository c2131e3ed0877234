"""The stage object that carries one booking through the placer, and the place-and-record stage.

A create routes a prepared request (services.reserve); a retry or a new inline booking is then
charged, placed and recorded here, in the caller's transaction. The planner is built once per
stage and handed to everything that plans the request again: replans, preemption, the never-fits
check and hints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from capacity import observe, rules
from capacity.models import Reservation
from capacity.models.reservations import NO_FIT, unschedulable
from capacity.placement import NOT_FOUND, CapacityError, PlacementRequest, reason_rest
from capacity.placers import quota
from capacity.placers.commit import Owner
from capacity.placers.inline import place
from capacity.placers.lease import place_lease
from capacity.placers.loader import PoolRow, load_pool
from capacity.placers.planning import Planner
from capacity.placers.reads import Reads
from capacity.placers.types import INLINE, Outcome, PlacerConfig
from inventory.models import Tenant

from .hints import hints, smaller_hints
from .satisfiable import NeverFits, never_fits, unsatisfiable_condition

# Where a prepared request goes (services.reserve.route).
ARCHIVED, NEVER_FITS, QUEUE, INLINE_ROUTE, LEASE = "archived", "never-fits", "queue", "inline", "lease"


@dataclass
class Stage:
    """One booking on its way: prepared, routed, admitted, charged, placed, recorded.

    `charged`: the insert charged its quota; `explain`: a new reservation, whose pending outcome
    also says whether it could ever fit or what would; `reads`: the window's reads the insert sent
    ahead for the first plan; `retry`: a pending booking tried again (services.release.retry_pending),
    not a request's first placement.
    """

    tenant: Tenant
    request: PlacementRequest
    config: PlacerConfig
    now: datetime
    pool: PoolRow | None = None
    route: str = INLINE_ROUTE
    reservation: Reservation | None = None
    charged: bool = False
    explain: bool = False
    never: NeverFits | None = None
    reads: Reads | None = None
    planner: Planner | None = None
    outcome: Outcome | None = None
    retry: bool = False

    def built(self, pool: PoolRow) -> Planner:
        """Return the request's planner, built the first time it is asked for."""
        self.planner = Planner.of(self.request, pool, self.config, self.planner)
        return self.planner


def place_and_record(stage: Stage) -> Outcome:
    """Charge quota, place, and record the outcome on the reservation (in the caller's transaction).

    A refused charge raises QUOTA_EXCEEDED having written nothing. `stage.now` is the placement's
    time (when spot work it takes back ends, at the earliest).
    """
    reservation, tenant, request, config = stage.reservation, stage.tenant, stage.request, stage.config
    assert reservation is not None
    owner = Owner(reservation_pk=reservation.pk)

    def charge(amounts: Mapping[str, int]) -> None:
        quota.charge(tenant.pk, tenant.slug, reservation.pk, amounts, request.during)

    pool = stage.pool or load_pool(request.pool_id)
    if request.lease:
        # What a lease holds depends on the node it takes: charged once the node is chosen.
        if pool is None:
            raise CapacityError(NOT_FOUND, f"no pool {request.pool_id}")
        outcome = place_lease(request, pool, owner, config, charge=charge, now=stage.now)
    else:
        if not stage.charged:
            charge(quota.demand(request))
        built = stage.built(pool) if pool is not None and not pool.view.archived else None
        outcome = place(
            request, request.pool_id, owner, config, pool=pool, now=stage.now, reads=stage.reads, built=built
        )
    stage.reads = None
    observe.tell(
        "placement",
        INLINE,
        outcome.status,
        reason=outcome.reason,
        lost=len(outcome.lost),
        preempted=outcome.preempted,
        retry=stage.retry,
    )
    if outcome.status == "placed":
        # The commit's own statement marked the row placed; this copy follows.
        reservation.status = Reservation.Status.PLACED
        reservation.conditions = [] if outcome.borrowed is None else [outcome.borrowed.condition]
        if outcome.starts_later is not None:  # it waits for spot work's notice (policy.notice)
            reservation.conditions.append(outcome.starts_later)
        reservation.borrowed_gpus = 0.0 if outcome.borrowed is None else outcome.borrowed.gpus
        reservation.lent_from = list(outcome.lent_from)
        # As the row reads: a change never before the creation (migration 0021's trigger).
        reservation.updated_at = max(stage.now, reservation.created_at)
        # The pool's rules once placed (capacity.rules), a create and a retry of a pending booking
        # alike: maxFutureGpuHours under the tenant's quota lock, counting the booking just written;
        # above approvalAboveGpuHours, held for an operator (policy.approval).
        held = None
        if pool is not None:
            held = rules.placed(
                rules.Booking(reservation.pk, tenant.pk, tenant.slug, pool, request, stage.now)
            )
        if held is not None:
            reservation.conditions = held
    else:
        # A pending reservation holds no quota; a retry charges it again.
        quota.refund([reservation.pk])
        set_pending(reservation, outcome.reason, rest=reason_rest(outcome.plan, outcome.reason))
        if stage.explain and pool is not None and not pool.view.archived:
            _explain_pending(stage, pool)
        reservation.save(update_fields=["status", "conditions", "updated_at"])
    stage.outcome = outcome
    return outcome


def _explain_pending(stage: Stage, pool: PoolRow) -> None:
    """Tell a new pending reservation why it may never fit (Unsatisfiable), else its best hint.

    Written with the pending status, in one save: the condition history shows one change.
    """
    reservation, request = stage.reservation, stage.request
    assert reservation is not None
    built = stage.built(pool)
    never = never_fits(request, pool, stage.tenant.pk, stage.config, built=built)
    if never is not None:
        mark_unsatisfiable(reservation, never)
    if never is None:
        found = hints(request, pool, stage.config, built)
    elif never.field == "count":
        found = smaller_hints(request, pool, stage.config, built)
    else:
        return
    if found and reservation.conditions:
        reservation.conditions[0] = {**reservation.conditions[0], "hint": found[0]}


def set_pending(
    reservation: Reservation, reason: str, kind: str = NO_FIT, rest: list[tuple[int, str]] | None = None
) -> None:
    """Mark a reservation pending with the reason in its Unschedulable condition (not saved)."""
    reservation.status = Reservation.Status.PENDING
    reservation.conditions = [unschedulable(reason, kind, rest)]


def mark_unsatisfiable(reservation: Reservation, why: NeverFits) -> None:
    """Add the Unsatisfiable condition to a pending reservation: the placer no longer retries it."""
    reservation.conditions = [*reservation.conditions, unsatisfiable_condition(why)]
