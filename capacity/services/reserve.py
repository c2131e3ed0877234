"""Reserve: one path for every create.

prepared (services.prepare) → routed (archived, never fits, queue, inline, lease) → admitted →
charged with the insert → placed → recorded (services.placing), the same idempotency key
answering the first outcome. Lock order in every transaction: reservation → the tenant's quota
lock → pools → nodes → devices → node_resources.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from capacity import rules
from capacity.access import EVERYONE, Scope
from capacity.conf import placer_config
from capacity.db.literals import to_datetime
from capacity.db.retry import retry_on_conflict
from capacity.models import Reservation
from capacity.placement import ARCHIVED_REASON, INVALID_INPUT, CapacityError, run_admit
from capacity.placement.errors import IDEMPOTENCY_CONFLICT, IDEMPOTENCY_IN_FLIGHT
from capacity.placers.index import pool_index
from capacity.placers.inline import send_ahead
from capacity.placers.planning import Planner, uses_shortlist
from capacity.placers.reads import Reads
from capacity.placers.types import POOL_LEASE, Outcome, PlacerConfig
from trail.context import stamp

from . import insert, lookups
from .placing import (
    ARCHIVED,
    INLINE_ROUTE,
    LEASE,
    NEVER_FITS,
    QUEUE,
    Stage,
    mark_unsatisfiable,
    place_and_record,
    set_pending,
)
from .prepare import Prepared, afresh, prepare
from .satisfiable import never_fits
from .waiting import await_placer


@dataclass
class ReserveResult:
    """A reservation after reserve: its status, and when it was placed, the plan it came from."""

    reservation: Reservation
    created: bool
    outcome: Outcome | None = None


def admission_context(tenant: object, identity: str, kind: str) -> dict[str, Any]:
    """Return what admit hooks see of a create: the tenant, who asks, how (user or cli), the action."""
    return {"tenant": tenant, "identity": identity, "identityKind": kind, "action": "reservations.create"}


def reserve(
    data: Mapping[str, Any],
    *,
    scope: Scope = EVERYONE,
    admission: Any = None,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
    node_labels: Mapping[str, str] | None = None,
    prepared: Prepared | None = None,
    planner: Planner | None = None,
) -> ReserveResult:
    """Create a reservation and place it; the same idempotency key returns the first answer.

    The inline placer answers placed or pending. The pool-lease placer answers pending with a
    Queued condition (gangs still place inline; instances never come here) and, with `wait`, holds the answer
    until its batch ran or the time is up. A caller that prepared `data` already (the booking
    page, which asks first whether it could ever fit) passes `prepared` and the `planner` it built.
    """
    lookups.start()
    if prepared is None:
        for name in ("repeat", "allOrNothing"):
            if isinstance(data, Mapping) and name in data:
                raise CapacityError(INVALID_INPUT, f"{name}: a series is booked by reserve_series")
        config = config or placer_config()
        # Admit hooks see each request once, so they see it with a lookup read afresh. Otherwise the
        # tenant and pool may come from an earlier request: the statement that inserts the
        # reservation with its charges checks that they still hold (StaleLookup otherwise).
        fresh = admission is not None and any(p.admit is not None for p in config.plugins)
        prepared = prepare(
            data, scope=scope, now=now, config=config, node_labels=node_labels, kept=None if fresh else True
        )
    # The pool's outside check, before any lock: no transaction is open while it is asked.
    prepared, asked = consult_outside(prepared, scope, admission, None)
    try:
        return _create(prepared, admission, planner)
    except (insert.StaleLookup, CapacityError) as stop:
        # An answer decided on a kept lookup before the insert checked it (policy, gang size,
        # quota, archived, a replayed key) is decided again on the lookup read afresh: the
        # request keeps its preparation (input, validation, time, settings); only the tenant and
        # pool are read again, and it is routed on them.
        if isinstance(stop, CapacityError) and not lookups.used_kept():
            raise
        fresh, _ = consult_outside(afresh(prepared, scope), scope, admission, asked)
        return _create(fresh, admission, planner)


def consult_outside(
    prepared: Prepared, scope: Scope, admission: Any, asked: tuple | None = None
) -> tuple[Prepared, tuple]:
    """Run the pool's BEFORE_CREATE rules (the outside check, policy.outside_check) unless `asked` is
    what they were asked on.

    A rule there is never asked on a kept lookup (an operator may have moved it): its pool is read
    afresh first. Returns the request as asked and what the rules were asked on.
    """
    if not rules.at(rules.BEFORE_CREATE, prepared.pool):
        return prepared, ()
    if prepared.digest is not None:
        prepared = afresh(prepared, scope)
    return prepared, rules.before_create(prepared, _identity(admission), asked)


def _identity(admission: Any) -> str:
    """Return who asks, as admit hooks see it (admission_context), or ""."""
    return str(admission.get("identity") or "") if isinstance(admission, Mapping) else ""


@retry_on_conflict
def _create(prepared: Prepared, admission: Any, planner: Planner | None) -> ReserveResult:
    """Route the prepared request, then insert, charge, place and record it."""
    stage = route(prepared, planner)
    if prepared.digest is not None and not stage.charged:
        raise insert.StaleLookup  # only the charged insert checks a kept lookup
    fields = reservation_fields(prepared)
    wait_ms = prepared.extra["wait_ms"]
    if stage.route == QUEUE and insert.can_commit_at_once():
        return _queue(stage, prepared, fields, admission, wait_ms)
    with transaction.atomic():
        if not stage.charged:
            stamp()  # the charged insert names who asks itself (insert_function.py)
        existing = _replayed(prepared)
        if existing is not None:
            return ReserveResult(existing, created=False)
        if admission is not None and stage.route != ARCHIVED:
            # After the archived check: an archived pool answers pending, whatever policy or quota say.
            run_admit(prepared.config.plugins, stage.request, admission)
        reservation = insert_routed(stage, prepared, fields)
        if reservation is None:
            return ReserveResult(_taken_key(prepared), created=False)
        outcome = place_routed(stage)  # maxFutureGpuHours is checked where it is placed (services.placing)
    if stage.route == QUEUE and wait_ms:
        reservation = await_placer(reservation, wait_ms)
    return ReserveResult(reservation, created=True, outcome=outcome)


def route(prepared: Prepared, planner: Planner | None = None) -> Stage:
    """Return the stage of a prepared request, routed (with the request's planner, when built).

    Gangs and leases place inline under both placers: they need an answer at once. A request for
    the pool-lease placer gets the cheap never-fit checks now (the batch would only find it
    pending); an inline one plans the emptied pool only if it ends up pending. Everything but what
    places nothing now (archived, never fits) and leases, whose charge depends on the node they
    take, is charged with the insert, in one round trip; a queued one is refunded by the batch if
    it ends up pending.
    """
    request, pool, config = prepared.request, prepared.pool, prepared.config
    stage = Stage(prepared.tenant, request, config, prepared.now, pool=pool, explain=True, planner=planner)
    if pool.view.archived:
        stage.route = ARCHIVED
    elif request.lease:
        stage.route = LEASE
    elif config.placer == POOL_LEASE and request.gang is None and not _counts_gpu_hours(pool):
        stage.never = never_fits(
            request, pool, prepared.tenant.pk, config, plan_empty=False, check_quota=False
        )
        stage.route = QUEUE if stage.never is None else NEVER_FITS
    stage.charged = stage.route in (QUEUE, INLINE_ROUTE)
    return stage


def _counts_gpu_hours(pool) -> bool:
    """Return whether a rule the pool sets needs the tenant's quota lock (maxFutureGpuHours): its
    creates place inline, where the lock is taken (a batch takes no quota lock)."""
    return rules.places_inline(pool)


def reservation_fields(prepared: Prepared) -> dict[str, Any]:
    """Return the new reservation's columns."""
    request = prepared.request
    return {
        "tenant": prepared.tenant,
        "pool_id": prepared.pool.pk,
        # The owner is the reservation itself: stored_request() puts its id back.
        "request": {
            "input": prepared.extra["input"],
            "placement": {k: v for k, v in prepared.core.items() if k != "reservationId"},
        },
        "idempotency_key": prepared.extra["idempotency_key"],
        "priority": request.priority,
        "binding": prepared.extra["binding"],
        "keep_when_idle": prepared.extra.get("keep_when_idle", False),
        "starts_at": to_datetime(request.during.start),
        "ends_at": to_datetime(request.during.end),
    }


def insert_routed(stage: Stage, prepared: Prepared, fields: dict[str, Any]) -> Reservation | None:
    """Insert the reservation (with its charges when routed so); None when its key was taken meanwhile.

    An inline placement's window reads and its first savepoint travel in the insert's pipeline: the
    commit is then one statement of its own.
    """
    if not stage.charged:
        reservation = insert.insert_uncharged(fields)
    else:
        request, pool = stage.request, prepared.pool
        reads: list[Reads] = []

        def send() -> None:
            reads.append(send_ahead(pool_index(pool), request.during, request.resources))

        ahead = stage.route == INLINE_ROUTE and uses_shortlist(request, stage.config)
        try:
            reservation = insert.insert_charged(
                fields,
                request,
                queued=stage.route == QUEUE,
                commit=False,
                digest=prepared.digest,
                also=send if ahead else None,
            )
        except BaseException:
            for unread in reads:
                unread.close()
            raise
        if reservation is None:
            for unread in reads:
                unread.close()
        stage.reads = reads[0] if reads else None
    if reservation is not None:
        stage.reservation = reservation
        stage.request = dataclasses.replace(stage.request, reservation_id=str(reservation.pk))
    return reservation


def place_routed(stage: Stage) -> Outcome:
    """Place the inserted reservation as routed and record the outcome on it."""
    reservation = stage.reservation
    assert reservation is not None
    if stage.route == QUEUE:
        return Outcome("queued")
    if stage.route in (INLINE_ROUTE, LEASE):
        return place_and_record(stage)
    if stage.route == ARCHIVED:
        outcome = Outcome("pending", reason=ARCHIVED_REASON)
        set_pending(reservation, ARCHIVED_REASON)
    else:
        assert stage.never is not None
        outcome = Outcome("pending", reason=stage.never.message)
        set_pending(reservation, stage.never.message)
        mark_unsatisfiable(reservation, stage.never)
    reservation.save(update_fields=["status", "conditions", "updated_at"])
    return outcome


def _queue(
    stage: Stage,
    prepared: Prepared,
    fields: dict[str, Any],
    admission: Any,
    wait_ms: int,
) -> ReserveResult:
    """Queue a request for the pool-lease placer: insert, charge and commit in one round trip.

    A kept tenant and pool (`prepared.digest`) raise StaleLookup, nothing written, when they
    changed since.
    """
    existing = _replayed(prepared)
    if existing is not None:
        return ReserveResult(existing, created=False)
    if admission is not None:
        run_admit(stage.config.plugins, stage.request, admission)
    reservation = insert.insert_charged(
        fields, stage.request, queued=True, commit=True, digest=prepared.digest
    )
    if reservation is None:
        return ReserveResult(_taken_key(prepared), created=False)
    if wait_ms:
        reservation = await_placer(reservation, wait_ms)
    return ReserveResult(reservation, created=True, outcome=Outcome("queued"))


def _replayed(prepared: Prepared) -> Reservation | None:
    """Return the reservation an earlier request with this idempotency key created, if any.

    Never on a kept lookup: that answer is given for a tenant read afresh.
    """
    key = prepared.extra["idempotency_key"]
    existing = _idempotent(prepared, key) if key is not None else None
    if existing is not None and prepared.digest is not None:
        raise insert.StaleLookup
    return existing


def _taken_key(prepared: Prepared) -> Reservation:
    """Return the reservation of a concurrent request with the same key that committed first."""
    key = prepared.extra["idempotency_key"]
    existing = _idempotent(prepared, key)
    if existing is None:
        raise CapacityError(IDEMPOTENCY_IN_FLIGHT, f"idempotency key {key} is in use by a request in flight")
    return existing


def _idempotent(prepared: Prepared, key: str) -> Reservation | None:
    existing = Reservation.objects.filter(tenant=prepared.tenant, idempotency_key=key).first()
    if existing is not None and existing.request.get("input") != prepared.extra["input"]:
        raise CapacityError(
            IDEMPOTENCY_CONFLICT, f"idempotency key {key} was already used for a different request"
        )
    return existing
