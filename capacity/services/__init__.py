"""The one path into capacity for views, the API, the CLI and the port.

reserve: validate (INVALID_INPUT before any lock) → tenant, pool and idempotency → admit hooks →
quota charged → the placer → placed, or pending with the reason in an `Unschedulable` condition.
Lock order in every transaction: reservation → the tenant's quota lock → pools → nodes → devices →
node_resources. Quota, scalar room and capacity are rows over time (capacity.quota, ScalarClaim,
capacity.rollups), never counters.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.db.models import Window as SQLWindow
from django.db.models.functions import RowNumber
from django.utils import timezone

from capacity import quota
from capacity.conf import placer_config
from capacity.metrics import events as metrics
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.models.reservations import NO_FIT, QUEUED, QUEUED_CONDITION, unschedulable
from capacity.models.reservations import QUEUED_MESSAGE as QUEUED_MESSAGE  # pages and tests read it here
from capacity.models.reservations import UNSCHEDULABLE as UNSCHEDULABLE  # views and commands read it here
from capacity.placement import (
    ARCHIVED_REASON,
    CONFLICT,
    INVALID_INPUT,
    NOT_FOUND,
    QUOTA_EXCEEDED,
    CapacityError,
    PlacementRequest,
    Plan,
    Window,
    reason_rest,
    run_admit,
    validate_request,
)
from capacity.placers.commit import Owner
from capacity.placers.index import pool_index
from capacity.placers.inline import (
    INLINE,
    POOL_LEASE,
    Outcome,
    PlacerConfig,
    place,
    plan_request,
    planner,
    uses_shortlist,
)
from capacity.placers.lease import place_lease, plan_lease_now
from capacity.placers.loader import PoolRow, load_pool, may_use, to_datetime
from capacity.placers.preempt import find_lease_preemption, find_preemption
from capacity.placers.reads import Reads, send_reads
from capacity.quota import QUOTA_EXCEEDED_REASON
from capacity.retry import retry_on_conflict
from capacity.waits import HUB
from inventory.models import Pool, Tenant

from . import insert, lookups
from .hints import Alternatives, alternatives, hints
from .satisfiable import UNSATISFIABLE, NeverFits, never_fits, unsatisfiable_condition

DEVICES_LIMITS_LABEL = "bc.dev/cap.devices.limits"
KUBERNETES_BINDING_LABEL = "bc.dev/cap.binding.kubernetes"
MAX_PREVIEW_CANDIDATES = 10
# Fields that capacity reads itself; everything else goes to the placement core's validator.
SERVICE_FIELDS = ("idempotencyKey", "binding", "duration", "wait")
OWNER_FIELDS = ("reservationId", "instanceId")
# \A and \Z: `$` matches before a trailing newline; [0-9]: `\d` matches other scripts' digits.
IDEMPOTENCY_KEY_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,199}\Z")
DURATION_RE = re.compile(r"\A([0-9]+)(m|h|d|w)\Z")
# A window may start this long before now (a clock a little behind, a form filled in slowly).
START_GRACE = timedelta(minutes=5)
# The caller's input is kept with the reservation: bound what it may cost to store.
MAX_INPUT_BYTES = 64 * 1024
# Six digits hold every duration up to the limit (366 days is 527,040 minutes).
MAX_DURATION_DIGITS = 6
# Windows must stay between 1970 and 9999, the range Postgres and Python datetimes share here.
MAX_EPOCH_MS = 253_402_300_799_999
DURATION_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MAX_DURATION = timedelta(days=366)
PENDING_RETRY_BATCH = 50
# Pending reservations a release retries before it answers (the worker retries every one).
RELEASE_RETRY_BATCH = 8
# With the pool-lease placer, `wait: {timeoutMs}` holds the answer until the batch ran, at most 30 s.
MAX_WAIT_MS = 30_000


@dataclass(frozen=True)
class Scope:
    """Whose reservations a caller may touch: the tenant slugs, or every tenant (operators)."""

    tenants: frozenset[str] | None = None

    def allows(self, tenant_slug: str) -> bool:
        """Return whether the caller may act for this tenant."""
        return self.tenants is None or tenant_slug in self.tenants


EVERYONE = Scope()


@dataclass
class ReserveResult:
    """A reservation after reserve: its status, and when it was placed, the plan it came from."""

    reservation: Reservation
    created: bool
    outcome: Outcome | None = None


def parse_duration(text: object, field: str = "duration") -> timedelta:
    """Return the timedelta of `30m`, `12h`, `1d` or `2w`."""
    match = DURATION_RE.match(text) if isinstance(text, str) else None
    if match and len(match[1]) > MAX_DURATION_DIGITS:
        raise CapacityError(INVALID_INPUT, f"{field} must be at most 366d")
    if not match or int(match[1]) == 0:
        raise CapacityError(INVALID_INPUT, f"{field} must look like 30m, 12h, 3d or 2w")
    value = timedelta(**{DURATION_UNITS[match[2]]: int(match[1])})
    if value > MAX_DURATION:
        raise CapacityError(INVALID_INPUT, f"{field} must be at most 366d")
    return value


def _epoch_ms(value: object, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_EPOCH_MS:
            raise CapacityError(INVALID_INPUT, f"{field} must lie between 1970-01-01 and 9999-12-31 (UTC)")
        return value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                raise CapacityError(INVALID_INPUT, f"{field} must carry a time zone")
            return _epoch_ms(int(parsed.timestamp() * 1000), field)
    raise CapacityError(INVALID_INPUT, f"{field} must be epoch milliseconds or an ISO 8601 time")


def normalize(
    data: Mapping[str, Any],
    *,
    now: datetime,
    node_labels: Mapping[str, str] | None = None,
    owner_allowed: bool = False,
):
    """Split caller input into the core's request data and capacity's own fields; fill in the window.

    Callers give `duration` (starting now) or `during` {start, end}; capacity adds the capability
    labels its own reservations need. Callers may not set nodeLabels themselves.
    """
    if not isinstance(data, Mapping):
        raise CapacityError(INVALID_INPUT, "the request must be an object")
    core = {k: v for k, v in data.items() if k not in SERVICE_FIELDS}
    for name in ("nodeLabels", "lease", *(() if owner_allowed else OWNER_FIELDS)):
        if name in core:
            # Capacity sets these itself: the owner is the reservation it creates, labels its own.
            raise CapacityError(INVALID_INPUT, f"{name} is not a known field")
    key = data.get("idempotencyKey")
    if key is not None and (not isinstance(key, str) or not IDEMPOTENCY_KEY_RE.match(key)):
        raise CapacityError(
            INVALID_INPUT, "idempotencyKey must be 1 to 200 letters, digits, '.', '_', ':' or '-'"
        )
    binding = data.get("binding", Reservation.Binding.NONE)
    if binding not in Reservation.Binding.values:
        raise CapacityError(INVALID_INPUT, "binding must be one of none, node, kubernetes")
    if binding == Reservation.Binding.NODE:
        core["lease"] = True
    wait_ms = _wait_ms(data["wait"]) if "wait" in data else 0
    if "duration" in data and "during" in data:
        raise CapacityError(INVALID_INPUT, "give either duration or during, not both")
    if "duration" in data:
        start = int(now.timestamp() * 1000)
        core["during"] = {
            "start": start,
            "end": start + int(parse_duration(data["duration"]).total_seconds() * 1000),
        }
    elif isinstance(data.get("during"), Mapping):
        during = data["during"]
        core["during"] = {
            **during,
            **{k: _epoch_ms(during[k], f"during.{k}") for k in ("start", "end") if k in during},
        }
    elif "during" not in data:
        raise CapacityError(INVALID_INPUT, "duration or during is required")
    _check_window(core.get("during"), now)
    if len(json.dumps(stored_input(data), default=str)) > MAX_INPUT_BYTES:
        raise CapacityError(INVALID_INPUT, f"the request must be at most {MAX_INPUT_BYTES} bytes as JSON")
    labels = dict(node_labels or {})
    # Capability labels go on capacity's own reservations; a module sets its own instances' labels.
    if data.get("resources") and "instanceId" not in data:
        labels.setdefault(DEVICES_LIMITS_LABEL, "*")
    if binding == Reservation.Binding.KUBERNETES:
        labels.setdefault(KUBERNETES_BINDING_LABEL, "*")
    if labels:
        core["nodeLabels"] = labels
    if "reservationId" not in core and "instanceId" not in core:
        core["reservationId"] = "new"
    return core, {"idempotency_key": key, "binding": binding, "wait_ms": wait_ms}


def _check_window(during: object, now: datetime) -> None:
    """Refuse a window longer than 366 days, one that has ended, or one that starts well before now."""
    if not isinstance(during, Mapping):
        return  # the core's validator names what is wrong with it
    start, end = during.get("start"), during.get("end")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)) or end <= start:
        return
    if end - start > MAX_DURATION.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "during must be at most 366d long")
    now_ms = int(now.timestamp() * 1000)
    if end <= now_ms:
        raise CapacityError(INVALID_INPUT, "during.end is in the past")
    if start < now_ms - START_GRACE.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "during.start must not be more than 5 minutes before now")


def _wait_ms(wait: object) -> int:
    timeout = wait.get("timeoutMs") if isinstance(wait, Mapping) else None
    if (
        not isinstance(wait, Mapping)
        or set(wait) != {"timeoutMs"}
        or not isinstance(timeout, int)
        or isinstance(timeout, bool)
        or not 0 <= timeout <= MAX_WAIT_MS
    ):
        raise CapacityError(INVALID_INPUT, f"wait must be {{timeoutMs}} with 0 to {MAX_WAIT_MS} milliseconds")
    return timeout


def _tenant_and_pool(request: PlacementRequest, scope: Scope) -> tuple[Tenant, PoolRow]:
    return lookups.tenant_and_pool(request, scope)


# A quota report covers a week from now unless the caller names a window.
QUOTA_REPORT_WINDOW = timedelta(days=7)


def quota_report(
    tenant_slug: str,
    *,
    scope: Scope = EVERYONE,
    start: object = None,
    end: object = None,
    now: datetime | None = None,
) -> tuple[Tenant, int, int, list[quota.Use]]:
    """Return the tenant, the window (epoch ms) and its peak use against each limit in that window.

    The window defaults to a week from now; `start` and `end` are epoch milliseconds or ISO 8601
    times, and the window obeys the 366-day limit bookings do.
    """
    now = now or timezone.now()
    tenant = Tenant.objects.filter(slug=tenant_slug).first() if isinstance(tenant_slug, str) else None
    if tenant is None or not scope.allows(tenant.slug):
        raise CapacityError(NOT_FOUND, f"no tenant {tenant_slug}")
    first = _epoch_ms(start, "start") if start is not None else int(now.timestamp() * 1000)
    last = (
        _epoch_ms(end, "end") if end is not None else first + int(QUOTA_REPORT_WINDOW.total_seconds() * 1000)
    )
    if last <= first:
        raise CapacityError(INVALID_INPUT, "end must be after start")
    if last - first > MAX_DURATION.total_seconds() * 1000:
        raise CapacityError(INVALID_INPUT, "the window must be at most 366d")
    return tenant, first, last, quota.report(tenant.pk, Window(first, last), now)


def pool_allows(pool: Pool, tenant: Tenant) -> bool:
    """Return whether the tenant may use the pool (the same rule the placer's PoolRow applies)."""
    return may_use(pool.owner_tenant_id, tuple(t.pk for t in pool.tenants.all()), tenant.pk)


# A dedication names its tenant; to any other tenant it reads as this.
_DEDICATION_RE = re.compile(r"dedicated=([A-Za-z0-9_-]+)")
ANOTHER_TENANTS_DEDICATION = "dedicated to another tenant"


def redact(text: str, scope: Scope) -> str:
    """Return a reason as a caller may read it: another tenant's dedication is not named.

    Stored reasons stay exact (operators read them whole); tenants read "dedicated to another
    tenant" where the spec's reason says `dedicated=<slug>` of a tenant not theirs.
    """
    if scope.tenants is None or not text or "dedicated=" not in text:
        return text
    return _DEDICATION_RE.sub(
        lambda m: m[0] if sees_tenant(scope, m[1]) else ANOTHER_TENANTS_DEDICATION, text
    )


def sees_tenant(scope: Scope, slug: str | None) -> bool:
    """Return whether a caller may read this tenant's name (its own, or any for operators)."""
    return scope.tenants is None or slug is None or slug in scope.tenants


def redacted_conditions(conditions: list[dict], scope: Scope) -> list[dict]:
    """Return a reservation's conditions with their messages redacted for the caller."""
    if scope.tenants is None:
        return conditions
    return [
        {**c, "message": redact(c.get("message", ""), scope)} if "message" in c else c for c in conditions
    ]


def nodes_for(scope: Scope, nodes=None, *, pools_checked: bool = False):
    """Return the nodes a caller may read: in its pools, and not owned by another tenant.

    A node another tenant owns adds nothing to the caller and tells it about that tenant: to a
    tenant it does not exist (404), as a reservation of another tenant does not. With
    `pools_checked` the caller has already limited `nodes` to pools it may read.
    """
    from django.db.models import Q

    from inventory.models import Node

    nodes = Node.objects.all() if nodes is None else nodes
    if scope.tenants is None:
        return nodes
    if not pools_checked:
        nodes = nodes.filter(pool__in=[p.pk for p in pools_for(scope)])
    return nodes.filter(Q(owner_tenant__isnull=True) | Q(owner_tenant__slug__in=scope.tenants))


def may_read_node(scope: Scope, owner_slug: str | None) -> bool:
    """Return whether a caller may read a node with this owner (in a pool it may read)."""
    return sees_tenant(scope, owner_slug)


def pools_for(scope: Scope):
    """Return the pools a caller may book into or read."""
    pools = Pool.objects.select_related("site", "owner_tenant").prefetch_related("tenants")
    if scope.tenants is None:
        return pools
    tenants = list(Tenant.objects.filter(slug__in=scope.tenants))
    return [p for p in pools if any(pool_allows(p, t) for t in tenants)]


def _set_pending(
    reservation: Reservation, reason: str, kind: str = NO_FIT, rest: list[tuple[int, str]] | None = None
) -> None:
    reservation.status = Reservation.Status.PENDING
    reservation.conditions = [unschedulable(reason, kind, rest)]


def _apply(
    reservation: Reservation,
    tenant: Tenant,
    request: PlacementRequest,
    config: PlacerConfig,
    pool: PoolRow | None = None,
    now: datetime | None = None,
    explain: bool = False,
    charged: bool = False,
    reads: Reads | None = None,
) -> Outcome:
    """Charge quota, place, and record the outcome on the reservation (in the caller's transaction).

    With `explain` (a new reservation, not a retry) a pending outcome also says whether it could
    ever fit (Unsatisfiable) or what would (the best hint). `charged`: the insert charged it.

    A refused charge raises QUOTA_EXCEEDED having written nothing. `now` is the placement's time
    (when spot work it takes back ends, at the earliest).
    """
    stamp = now or timezone.now()
    owner = Owner(reservation_pk=reservation.pk)

    def charge(amounts: Mapping[str, int]) -> None:
        quota.charge(tenant.pk, tenant.slug, reservation.pk, amounts, request.during)

    if request.lease:
        # What a lease holds depends on the node it takes: charged once the node is chosen.
        pool = pool or load_pool(request.pool_id)
        if pool is None:
            raise CapacityError(NOT_FOUND, f"no pool {request.pool_id}")
        outcome = place_lease(request, pool, owner, config, charge=charge, now=stamp)
    else:
        if not charged:
            charge(quota.demand(request))
        outcome = place(request, request.pool_id, owner, config, pool=pool, now=stamp, reads=reads)
    metrics.placement(
        INLINE, outcome.status, reason=outcome.reason, lost=len(outcome.lost), preempted=outcome.preempted
    )
    if outcome.status == "placed":
        # The commit's own statement marked the row placed; this copy follows.
        reservation.status = Reservation.Status.PLACED
        reservation.conditions = []
        reservation.updated_at = stamp
    else:
        # A pending reservation holds no quota; a retry charges it again.
        quota.refund([reservation.pk])
        _set_pending(reservation, outcome.reason, rest=reason_rest(outcome.plan, outcome.reason))
        row = (pool or load_pool(request.pool_id)) if explain else None
        if row is not None and not row.view.archived:
            _explain_pending(reservation, request, row, tenant, config)
        reservation.save(update_fields=["status", "conditions", "updated_at"])
    return outcome


def _explain_pending(
    reservation: Reservation, request: PlacementRequest, pool: PoolRow, tenant: Tenant, config: PlacerConfig
) -> None:
    """Tell a new pending reservation why it may never fit (Unsatisfiable), else its best hint.

    Written with the pending status, in one save: the condition history shows one change.
    """
    never = never_fits(request, pool, tenant.pk, config)
    if never is not None:
        _mark_unsatisfiable(reservation, never)
        return
    found = hints(request, pool, config)
    if found and reservation.conditions:
        reservation.conditions[0] = {**reservation.conditions[0], "hint": found[0]}


def _mark_unsatisfiable(reservation: Reservation, why: NeverFits) -> None:
    """Add the Unsatisfiable condition to a pending reservation: the placer no longer retries it."""
    reservation.conditions = [*reservation.conditions, unsatisfiable_condition(why)]


def admission_context(tenant: object, identity: str, kind: str) -> dict[str, Any]:
    """Return what admit hooks see of a create: the tenant, who asks, how (user or cli), the action."""
    return {"tenant": tenant, "identity": identity, "identityKind": kind, "action": "reservations.create"}


@retry_on_conflict
def reserve(
    data: Mapping[str, Any],
    *,
    scope: Scope = EVERYONE,
    admission: Any = None,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
    node_labels: Mapping[str, str] | None = None,
) -> ReserveResult:
    """Create a reservation and place it; the same idempotency key returns the first answer.

    The inline placer answers placed or pending. The pool-lease placer answers pending with a
    Queued condition (gangs still place inline; instances never come here) and, with `wait`, holds the answer
    until its batch ran or the time is up.
    """
    args = (data, scope, admission, now, config, node_labels)
    lookups.start()
    try:
        return _reserve(*args, keep=True)
    except (insert.StaleLookup, CapacityError) as stop:
        # Any answer decided on a kept lookup before the insert checked it (policy, gang size,
        # quota) is asked again of one read afresh.
        if isinstance(stop, CapacityError) and not lookups.used_kept():
            raise
        lookups.forget(data.get("tenantId"), data.get("poolId"))
        return _reserve(*args, keep=False)


def _reserve(data, scope, admission, now, config, node_labels, *, keep: bool) -> ReserveResult:
    now = now or timezone.now()
    config = config or placer_config()
    core, extra = normalize(data, now=now, node_labels=node_labels)
    request = validate_request(core)
    key = extra["idempotency_key"]
    # Gangs and leases place inline under both placers: they need an answer at once.
    queue = config.placer == POOL_LEASE and request.gang is None and not request.lease
    # Plain reads, before the transaction: they take no lock, and its BEGIN then goes with the insert.
    # They may come from an earlier request: the statement that inserts the reservation with its
    # charges checks that they still hold, and anything else reads them afresh (StaleLookup).
    digest = None
    # Admit hooks see each request once, so they see it with a lookup read afresh.
    if request.lease or (admission is not None and any(p.admit is not None for p in config.plugins)):
        tenant, pool = _tenant_and_pool(request, scope)
    else:
        tenant, pool, digest = lookups.kept_tenant_and_pool(request, scope, use_kept=keep)
    check_gang_size(request, pool)
    # A queued request gets the cheap never-fit checks now (the batch would only find it pending);
    # an inline one plans the emptied pool only if it ends up pending.
    never = (
        never_fits(request, pool, tenant.pk, config, plan_empty=False, check_quota=False) if queue else None
    )
    queue = queue and never is None
    fields = {
        "tenant": tenant,
        "pool_id": pool.pk,
        # The owner is the reservation itself: stored_request() puts its id back.
        "request": {
            "input": stored_input(data),
            "placement": {k: v for k, v in core.items() if k != "reservationId"},
        },
        "idempotency_key": key,
        "priority": request.priority,
        "binding": extra["binding"],
        "starts_at": to_datetime(request.during.start),
        "ends_at": to_datetime(request.during.end),
    }
    # Charged with the insert, in one round trip: everything but what places nothing now
    # (archived, never fits) and leases, whose charge depends on the node they take.
    # Queued: the batch refunds it if the request ends up pending.
    charged = not pool.view.archived and not request.lease and never is None
    if digest is not None and not charged:
        raise insert.StaleLookup  # only the charged insert checks a kept lookup
    if queue and charged and insert.can_commit_at_once():
        return _queue(data, tenant, request, fields, admission, config, extra["wait_ms"], digest)
    with transaction.atomic():
        existing = _replayed(tenant, key, data, digest)
        if existing is not None:
            return ReserveResult(existing, created=False)
        archived = pool.view.archived
        if admission is not None and not archived:
            # After the archived check: an archived pool answers pending, whatever policy or quota say.
            run_admit(config.plugins, request, admission)
        reads: list[Reads] = []  # an inline placement's window reads, sent with the insert

        def send() -> None:
            reads.append(send_reads(pool_index(pool), request.during, request.resources))

        if charged:
            # One round trip fewer: the plan's reads travel in the insert's pipeline.
            ahead = not queue and uses_shortlist(request, config)
            try:
                reservation = insert.insert_charged(
                    fields, request, queued=queue, commit=False, digest=digest, also=send if ahead else None
                )
            except BaseException:
                for unread in reads:
                    unread.close()
                raise
        else:
            reservation = insert.insert_uncharged(fields)
        if reservation is None:
            for unread in reads:
                unread.close()
            return ReserveResult(_taken_key(tenant, key, data), created=False)
        request = dataclasses.replace(request, reservation_id=str(reservation.pk))
        if archived:
            _set_pending(reservation, ARCHIVED_REASON)
            reservation.save(update_fields=["status", "conditions", "updated_at"])
            outcome = Outcome("pending", reason=ARCHIVED_REASON)
        elif queue:
            outcome = Outcome("queued")
        elif never is not None:
            outcome = Outcome("pending", reason=never.message)
            _set_pending(reservation, never.message)
            _mark_unsatisfiable(reservation, never)
            reservation.save(update_fields=["status", "conditions", "updated_at"])
        else:
            outcome = _apply(
                reservation,
                tenant,
                request,
                config,
                pool,
                now,
                explain=True,
                charged=charged,
                reads=reads[0] if reads else None,
            )
    if queue and extra["wait_ms"]:
        reservation = await_placer(reservation, extra["wait_ms"])
    return ReserveResult(reservation, created=True, outcome=outcome)


def _queue(
    data: Mapping[str, Any],
    tenant: Tenant,
    request: PlacementRequest,
    fields: dict[str, Any],
    admission: Any,
    config: PlacerConfig,
    wait_ms: int,
    digest: str | None,
) -> ReserveResult:
    """Queue a request for the pool-lease placer: insert, charge and commit in one round trip.

    `digest`: the tenant and pool were kept from an earlier request; raise StaleLookup (nothing
    written) when they changed since.
    """
    key = fields["idempotency_key"]
    existing = _replayed(tenant, key, data, digest)
    if existing is not None:
        return ReserveResult(existing, created=False)
    if admission is not None:
        run_admit(config.plugins, request, admission)
    reservation = insert.insert_charged(fields, request, queued=True, commit=True, digest=digest)
    if reservation is None:
        return ReserveResult(_taken_key(tenant, key, data), created=False)
    if wait_ms:
        reservation = await_placer(reservation, wait_ms)
    return ReserveResult(reservation, created=True, outcome=Outcome("queued"))


def _replayed(
    tenant: Tenant, key: str | None, data: Mapping[str, Any], digest: str | None
) -> Reservation | None:
    """Return the reservation an earlier request with this idempotency key created, if any.

    Never on a kept lookup (`digest`): that answer is given for a tenant read afresh.
    """
    existing = _idempotent(tenant, key, data) if key is not None else None
    if existing is not None and digest is not None:
        raise insert.StaleLookup
    return existing


def _taken_key(tenant: Tenant, key: str, data: Mapping[str, Any]) -> Reservation:
    """Return the reservation of a concurrent request with the same key that committed first."""
    existing = _idempotent(tenant, key, data)
    if existing is None:
        raise CapacityError(CONFLICT, f"idempotency key {key} is in use by a request in flight")
    return existing


def check_gang_size(request: PlacementRequest, pool: PoolRow) -> None:
    """Refuse a gang lease of more nodes than the pool holds: no booking could ever place it."""
    if request.lease and request.gang is not None:
        nodes = len(pool_index(pool).nodes.views)
        if request.gang.size > nodes:
            raise CapacityError(
                INVALID_INPUT,
                f"gang.size: a gang lease of {request.gang.size} nodes is larger than pool "
                f"{request.pool_id} ({nodes} nodes)",
            )


def is_queued(reservation: Reservation) -> bool:
    """Return whether the pool-lease placer has yet to place the reservation."""
    return (
        reservation.status == Reservation.Status.PENDING
        and reservation.condition(QUEUED_CONDITION) is not None
    )


def await_placer(reservation: Reservation, timeout_ms: int) -> Reservation:
    """Return the reservation once its batch ran, or as it is when `timeout_ms` have passed.

    Waits on the placer's notifications through the process's one listener (capacity.waits),
    holding no database connection and no lock meanwhile; inside a transaction the row is not yet
    visible to the placer, so it answers at once, as it does past the tenant's bound on waits.
    """
    if connection.in_atomic_block:
        return reservation
    deadline = time.monotonic() + timeout_ms / 1000
    with HUB.waiting(reservation.pk, reservation.tenant_id) as placed:
        while True:
            # Read after the waiter is registered, so a batch that ran meanwhile is not missed.
            current = Reservation.objects.get(pk=reservation.pk)
            remaining = deadline - time.monotonic()
            if placed is None or not is_queued(current) or remaining <= 0:
                return current
            connection.close()  # hold no connection while waiting; the next read opens one
            placed.wait(remaining)
            placed.clear()


def stored_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the caller's input as a reservation keeps it: `wait` says how to answer, not what to book."""
    return {k: v for k, v in data.items() if k != "wait"}


def stored_request(reservation: Reservation) -> PlacementRequest:
    """Return the validated placement request a reservation was created with."""
    return validate_request({**reservation.request["placement"], "reservationId": str(reservation.pk)})


def _idempotent(tenant: Tenant, key: str, data: Mapping[str, Any]) -> Reservation | None:
    existing = Reservation.objects.filter(tenant=tenant, idempotency_key=key).first()
    if existing is not None and existing.request.get("input") != stored_input(data):
        raise CapacityError(CONFLICT, f"idempotency key {key} was already used for a different request")
    return existing


def get(reservation_id: int | str, *, scope: Scope = EVERYONE) -> Reservation:
    """Return a reservation the caller may see, or raise NOT_FOUND."""
    try:
        reservation = Reservation.objects.select_related("tenant", "pool").get(pk=int(reservation_id))
    except (ValueError, TypeError, Reservation.DoesNotExist):
        raise CapacityError(NOT_FOUND, f"no reservation {reservation_id}") from None
    if not scope.allows(reservation.tenant.slug):
        raise CapacityError(NOT_FOUND, f"no reservation {reservation_id}")
    return reservation


def list_reservations(
    *, scope: Scope = EVERYONE, status: str | None = None, pool: str | None = None, tenant=None
):
    """Return the caller's reservations, newest first, optionally filtered."""
    qs = Reservation.objects.select_related("tenant", "pool")
    if scope.tenants is not None:
        qs = qs.filter(tenant__slug__in=scope.tenants)
    if status:
        qs = qs.filter(status=status)
    if pool:
        qs = qs.filter(pool__slug=pool)
    if tenant:
        qs = qs.filter(tenant__slug=tenant)
    return qs


def allocations_of(reservation: Reservation) -> list[dict]:
    """Return a reservation's allocations with their node and the atoms it asked for."""
    return allocations_for([reservation])[reservation.pk]


def allocations_for(reservations: Iterable[Reservation]) -> dict[int, list[dict]]:
    """Return the allocations of many reservations, by reservation pk, in two queries.

    Each has its node, the atoms the request asked for (slices booked only because their parent
    GPU was booked whole are left out), scalar claims, window and release time.
    """
    pks = [r.pk for r in reservations]
    allocations = list(Allocation.objects.filter(reservation__in=pks).select_related("node").order_by("pk"))
    booked: dict[int, list[tuple[str, str | None]]] = {}
    rows = DeviceBooking.objects.filter(allocation__in=allocations).values_list(
        "allocation_id", "device__uuid", "device__parent__uuid"
    )
    for allocation_id, uuid, parent in rows.order_by("device__index", "device__uuid"):
        booked.setdefault(allocation_id, []).append((uuid, parent))
    result: dict[int, list[dict]] = {pk: [] for pk in pks}
    for a in allocations:
        uuids = {uuid for uuid, _ in booked.get(a.pk, [])}
        result[a.reservation_id].append(
            {
                "id": a.pk,
                "nodeId": a.node.name,
                "atoms": [uuid for uuid, parent in booked.get(a.pk, []) if parent not in uuids],
                "resources": a.resources,
                "start": a.starts_at,
                "end": a.ends_at,
                "releasedAt": a.released_at,
            }
        )
    return result


@retry_on_conflict
@transaction.atomic
def release(
    reservation_id: int | str, *, scope: Scope = EVERYONE, now: datetime | None = None
) -> Reservation:
    """Release a reservation: quota refunded first, then its bookings and claims end at `now`.

    Locks the reservation row alone (not its tenant or pool: the lock order has pools after quota).
    """
    now = now or timezone.now()
    reservation = get(reservation_id, scope=scope)
    reservation = Reservation.objects.select_for_update(of=("self",)).get(pk=reservation.pk)
    if reservation.status in (Reservation.Status.RELEASED, Reservation.Status.PREEMPTED):
        return reservation  # already ended: a preempted reservation keeps its status and reason
    # Queued rows hold the quota charged at admission; the placer skips a row this lock holds and,
    # once released, no longer sees it queued. Either way what lies after now is given back.
    quota.refund([reservation.pk], now)
    if reservation.status == Reservation.Status.PLACED:
        end_allocations(reservation.allocations.filter(released_at__isnull=True), now)
        # A few, fairly, in the releasing request; the worker retries the rest.
        transaction.on_commit(lambda: retry_pending([reservation.pool_id], limit=RELEASE_RETRY_BATCH))
    reservation.status = Reservation.Status.RELEASED
    reservation.released_at = now
    reservation.conditions = []
    reservation.save(update_fields=["status", "released_at", "conditions", "updated_at"])
    return reservation


def end_allocations(allocations: Iterable[Allocation], now: datetime) -> None:
    """End allocations at `now`: future bookings and claims go, running ones are cut short.

    Nothing else follows: pool capacity and scalar room are read from these rows when asked.
    """
    ids = sorted(a.pk for a in allocations)
    if not ids:
        return
    with connection.cursor() as cur:
        for table in ("capacity_devicebooking", "capacity_scalarclaim"):
            cur.execute(
                f"DELETE FROM {table} WHERE allocation_id = ANY(%s) AND lower(during) >= %s", [ids, now]
            )
            cur.execute(
                f"""UPDATE {table} SET during = tstzrange(lower(during), %s, '[)')
                     WHERE allocation_id = ANY(%s) AND upper(during) > %s""",
                [now, ids, now],
            )
        cur.execute("UPDATE capacity_allocation SET released_at = %s WHERE id = ANY(%s)", [now, ids])


def expire_ended(*, now: datetime | None = None) -> int:
    """Release placed reservations whose window has ended; return how many."""
    now = now or timezone.now()
    ended = list(
        Reservation.objects.filter(status=Reservation.Status.PLACED, ends_at__lte=now).values_list(
            "pk", flat=True
        )
    )
    for pk in ended:
        release(pk, now=now)
    return len(ended)


def retry_pending(
    pool_ids: Iterable[int],
    *,
    config: PlacerConfig | None = None,
    now: datetime | None = None,
    limit: int = PENDING_RETRY_BATCH,
) -> int:
    """Try up to `limit` pending reservations of these pools again, each in its own transaction.

    Fair across tenants: each tenant's oldest first, then each tenant's second oldest, and so on,
    so one tenant's pile of requests that never fit cannot starve another's. These are the
    system's own re-placements: not admitted again. Rows another transaction holds are skipped;
    windows that have ended stay pending. Returns how many were placed.
    """
    config = config or placer_config()
    now = now or timezone.now()
    placed = 0
    turn = SQLWindow(RowNumber(), partition_by=[F("tenant_id")], order_by=[F("created_at"), F("pk")])
    candidates = list(
        Reservation.objects.filter(
            pool_id__in=list(pool_ids), status=Reservation.Status.PENDING, ends_at__gt=now
        )
        .exclude(QUEUED)  # the pool-lease placer's own
        .exclude(conditions__contains=[{"type": UNSATISFIABLE}])  # no node could ever take them
        .annotate(turn=turn)
        .order_by("turn", "created_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in candidates:
        with transaction.atomic():
            reservation = (
                Reservation.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("tenant")
                .filter(pk=pk, status=Reservation.Status.PENDING)
                .exclude(QUEUED)
                .first()
            )
            if reservation is None:
                continue
            request = stored_request(reservation)
            try:
                # A savepoint: whatever a refused attempt wrote goes with it.
                with transaction.atomic():
                    outcome = _apply(reservation, reservation.tenant, request, config, now=now)
            except CapacityError as err:
                kind = QUOTA_EXCEEDED_REASON if err.code == QUOTA_EXCEEDED else NO_FIT
                _set_pending(reservation, err.message, kind)
                reservation.save(update_fields=["status", "conditions", "updated_at"])
                continue
            placed += outcome.status == "placed"
    return placed


@dataclass
class Preview:
    """What a placement would do now: up to 10 candidates best first, or why nothing fits."""

    fits: bool
    candidates: list[dict]
    reason: str
    plan: Plan
    # For a regular request that fits only by preempting spot work: {"reservations": [ids], "startsAt": datetime}.
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
    now = now or timezone.now()
    config = config or placer_config()
    core, _extra = normalize(data, now=now, node_labels=node_labels)
    request = validate_request(core)
    tenant, pool_row = _tenant_and_pool(request, scope)
    check_gang_size(request, pool_row)
    if request.lease:
        plan, _static = plan_lease_now(request, pool_row)
    else:
        plan, _index = plan_request(
            request,
            pool_row,
            dataclasses.replace(config, random=None),
            shortlist=False if explain else None,
            protect=MAX_PREVIEW_CANDIDATES,
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
    if not plan.fits and request.priority == "regular":
        found = (
            find_lease_preemption(request, pool_row)
            if request.lease
            else find_preemption(request, pool_row, planner(request, pool_row, config))
        )
        if found is not None:
            preemptible = {"reservations": list(found.victims), "startsAt": found.at}
    found = Alternatives([])
    never = None
    if not plan.fits:
        never = never_fits(request, pool_row, tenant.pk, config)
        if never is None:
            found = alternatives(request, pool_row, config)
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
