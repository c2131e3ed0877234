"""Release and housekeeping: a release gives quota back and ends bookings; ended windows expire;
pending reservations are tried again, fairly across tenants."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from capacity import rules
from capacity.access import EVERYONE, Scope
from capacity.conf import placer_config
from capacity.db.retry import retry_on_conflict
from capacity.models import Reservation
from capacity.models.reservations import NO_FIT, QUEUED, QUEUED_CONDITION
from capacity.placement import POLICY_LIMIT, QUOTA_EXCEEDED, CapacityError
from capacity.placers import quota
from capacity.placers.ending import end_allocations, live_allocations
from capacity.placers.quota import QUOTA_EXCEEDED_REASON
from capacity.placers.types import PlacerConfig
from trail.context import stamp

from .inputs import stored_request
from .placing import Stage, place_and_record, set_pending
from .repair import wake_worker
from .reservations import get
from .satisfiable import UNSATISFIABLE

PENDING_RETRY_BATCH = 50
POLICY_LIMIT_REASON = "PolicyLimit"  # a retry past maxFutureGpuHours: its Unschedulable reason
# Pending reservations a release retries before it answers (the worker retries every one).
RELEASE_RETRY_BATCH = 8


RELEASED_CONDITION = "Released"
MAX_REASON = 200


@retry_on_conflict
@transaction.atomic
def release(
    reservation_id: int | str,
    *,
    scope: Scope = EVERYONE,
    now: datetime | None = None,
    reason: str = "",
    by: str = "",
    why: str = "ByRequest",
) -> Reservation:
    """Release a reservation: quota refunded first, then its bookings and claims end at `now`.

    With a `reason` (an operator's, or the idle policy's evidence) it keeps a `Released` condition
    saying who and why; its history keeps it. Locks the reservation row alone (not its tenant or
    pool: the lock order has pools after quota).
    """
    now = now or timezone.now()
    stamp()  # the release's event names who released, and in which request
    reservation = _locked(reservation_id, scope)
    if reservation is None:  # not live, or not the caller's
        found = get(reservation_id, scope=scope)  # NOT_FOUND, or what history keeps of it
        # Live and the caller's by get's check (its tenant slugs) though not by the lock's (ids).
        if not isinstance(found, Reservation) or (reservation := _locked(found.pk, EVERYONE)) is None:
            return found  # released or preempted long ago
    if reservation.status in (Reservation.Status.RELEASED, Reservation.Status.PREEMPTED):
        return reservation  # already ended: a preempted reservation keeps its status and reason
    # Queued rows hold the quota charged at admission; the placer skips a row this lock holds and,
    # once released, no longer sees it queued. Either way what lies after now is given back.
    quota.refund([reservation.pk], now)
    if reservation.status == Reservation.Status.PLACED:
        end_allocations(live_allocations([reservation.pk]), now)
        # Spot work lent its GPUs lives within its booking: it ends too; lent work ending counts
        # the hours it ran on lent GPUs (an ENDED rule: policy.reclaim).
        rules.ended([reservation.pk], [reservation.pk] if reservation.lent_from else [], now)
        # A few, fairly, in the releasing request; the worker retries the rest.
        transaction.on_commit(lambda: retry_pending([reservation.pool_id], limit=RELEASE_RETRY_BATCH))
    reservation.status = Reservation.Status.RELEASED
    reservation.released_at = now
    said = reason.strip()[:MAX_REASON]
    reservation.conditions = (
        [
            {
                "type": RELEASED_CONDITION,
                "status": "True",
                "reason": why,
                "message": f"{by}: {said}" if by else said,
            }
        ]
        if said
        else []
    )
    reservation.save(update_fields=["status", "released_at", "conditions", "updated_at"])
    return reservation


def _locked(reservation_id: int | str, scope: Scope) -> Reservation | None:
    """Lock and return the live reservation, with its tenant and pool, if the caller may see it.

    One statement: the scope is in its condition, so a row the caller may not see is never locked.
    """
    rows = Reservation.objects.select_related("tenant", "pool").select_for_update(of=("self",))
    if not scope.sees_every_tenant:
        by_id = scope.ids is not None
        rows = rows.filter(tenant_id__in=scope.ids) if by_id else rows.filter(tenant__slug__in=scope.tenants)
    try:
        return rows.filter(pk=int(reservation_id)).first()
    except (ValueError, TypeError, OverflowError):
        return None


def release_together(reservations: QuerySet[Reservation], *, now: datetime) -> list[int]:
    """Release these reservations, each as `release` does without a reason, in a few statements for all.

    Inside the caller's transaction: their rows are locked (in pk order, and those that ended
    meanwhile skipped), quota refunded before the bookings end, then every row marked released in
    one UPDATE, so each still writes its own event, webhook outbox row and history (row triggers).
    Pending work in their pools gets ONE retry pass after the commit (RELEASE_RETRY_BATCH, fairly)
    and the worker is woken for the rest, where a release per reservation queued a pass each (a
    series of 200 beside 24 pending work took 162 s). Return the pks released, in start order.
    """
    stamp()  # every release event names who released, and in which request
    rows = list(
        reservations.exclude(status__in=(Reservation.Status.RELEASED, Reservation.Status.PREEMPTED))
        .select_for_update(of=("self",))
        .order_by("pk")
        .values_list("pk", "status", "pool_id", "lent_from", "starts_at")
    )
    pks = [pk for pk, *_ in rows]
    if not pks:
        return []
    placed = [
        (pk, pool, lent) for pk, status, pool, lent, _start in rows if status == Reservation.Status.PLACED
    ]
    quota.refund(pks, now)  # queued rows' charge too, as `release` gives it back
    if placed:
        ended = [pk for pk, _pool, _lent in placed]
        end_allocations(live_allocations(ended), now)
        rules.ended(ended, [pk for pk, _pool, lent in placed if lent], now)
        pools = sorted({pool for _pk, pool, _lent in placed})
        transaction.on_commit(lambda: _retry_after_release(pools))
    Reservation.objects.filter(pk__in=pks).update(
        status=Reservation.Status.RELEASED, released_at=now, conditions=[], updated_at=timezone.now()
    )
    return [pk for pk, *_ in sorted(rows, key=lambda row: (row[4], row[0]))]


def _retry_after_release(pool_ids: list[int]) -> None:
    """Retry a few pending reservations of these pools in the request; wake the worker for the rest
    (its round retries every pool's, up to PENDING_RETRY_BATCH: woken, at once)."""
    retry_pending(pool_ids, limit=RELEASE_RETRY_BATCH)
    if _round_robin(pool_ids, timezone.now(), 1):  # some still wait (tried or not)
        wake_worker(pool_ids)


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
    fair: rules.Figures | None = None,
) -> int:
    """Try up to `limit` pending reservations of these pools again, each in its own transaction.

    Fair across tenants: each tenant's oldest first, then each tenant's second oldest, and so on,
    so one tenant's pile of requests that never fit cannot starve another's. A pool with shares
    tries its work in fair order instead (lowest fair share first: capacity.rules' queue, which
    policy.fair_queue fills), its n-th in turn n. `fair` is the round's figures, else read here if
    work waits. These are the system's own re-placements: not admitted again. Rows another
    transaction holds are skipped; windows that have ended stay pending. Returns how many were placed.
    """
    config = config or placer_config()
    now = now or timezone.now()
    pool_ids = list(pool_ids)
    placed = 0
    waiting = None
    if fair is None:
        waiting = _round_robin(pool_ids, now, limit)
        fair = rules.queue_figures(pool_ids, now) if waiting else {}
    if any(p in fair for p in pool_ids):
        candidates = rules.queue_retry(pool_ids, fair, now, limit)
    else:
        candidates = _round_robin(pool_ids, now, limit) if waiting is None else waiting
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
                    outcome = place_and_record(
                        Stage(reservation.tenant, request, config, now, reservation=reservation, retry=True)
                    )
            except CapacityError as err:
                # Past maxFutureGpuHours it waits until the tenant's other bookings end or shrink.
                kind = {QUOTA_EXCEEDED: QUOTA_EXCEEDED_REASON, POLICY_LIMIT: POLICY_LIMIT_REASON}.get(
                    err.code, NO_FIT
                )
                set_pending(reservation, err.message, kind)
                reservation.save(update_fields=["status", "conditions", "updated_at"])
                continue
            placed += outcome.status == "placed"
    return placed


# Pending work, each tenant's turn then oldest, but queued or unsatisfiable (the ORM's: 1 ms to build).
_ROUND_ROBIN_SQL = f"""
SELECT id FROM (SELECT r.id, r.created_at, row_number() OVER (PARTITION BY r.tenant_id ORDER BY r.created_at, r.id) AS turn
    FROM capacity_reservation r
   WHERE r.pool_id = ANY(%(pools)s::bigint[]) AND r.status = 'pending' AND r.ends_at > %(now)s
     AND NOT r.conditions @> '[{{"type": "{QUEUED_CONDITION}"}}]'::jsonb
     AND NOT r.conditions @> '[{{"type": "{UNSATISFIABLE}"}}]'::jsonb) q
 ORDER BY turn, created_at, id LIMIT %(limit)s
"""


def _round_robin(pool_ids: list[int], now: datetime, limit: int) -> list[int]:
    """Return up to `limit` pending pks of pools without shares: each tenant's turn, then oldest."""
    with connection.cursor() as cur:
        cur.execute(_ROUND_ROBIN_SQL, {"pools": list(pool_ids), "now": now, "limit": limit})
        return [pk for (pk,) in cur.fetchall()]
