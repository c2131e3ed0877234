"""Notice before preemption: a pool's spotNotice and spotMinRuntime (docs/policy.md).

A pool rule at SPARES and NOTICE (capacity.rules), registered by policy/apps.py: placement asks it
only when a regular request could take spot work back, and it reads the pool's policy (one
statement, as before) then. The worker's round runs finish_due before it releases ended windows.

Without a policy (or with both null) nothing here changes what preemption does. With `spotNotice`
N, a regular request that fits only by taking spot work (or borrowed GPUs) back cannot have them
before now + N: its window starts then (its end stays, so it is N shorter; a window that would be
left empty is not placed by preemption), and it carries a `StartsLater` condition saying why. Its
victims keep their devices until that moment, `preemptAt`: their bookings are cut there, they stay
placed with a `PreemptAt` condition (the webhook `reservation.preempted` goes out when it is
written, at the notice), and the worker marks them preempted at `preemptAt` (finish_due), the
`PreemptAt` condition turned into the usual `Preempted` one (no second event).

With `spotMinRuntime` M, spot work that will not have run M by the preemption time (its first
allocation started after preemptAt − M) is not a victim: it counts as regular work. A reclaim of
lent GPUs passes honour_min_runtime=False (the owner always comes first).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from capacity.port import (
    PREEMPT_AT,
    STARTS_LATER,
    Allocation,
    Notice,
    PlacementRequest,
    PoolRow,
    Rule,
    end_allocations,
    refund,
    to_datetime,
)

STARTS_LATER_REASON = "SpotNotice"
_POLICY_SQL = "SELECT spot_notice, spot_min_runtime FROM capacity_poolpolicy WHERE pool_id = %s"


@dataclass(frozen=True)
class SpotPolicy:
    """What a pool's policy says about taking spot work back: the notice and the minimum runtime."""

    notice: timedelta | None = None
    min_runtime: timedelta | None = None


def spot_policy(pool_pk: int) -> SpotPolicy:
    """Return the pool's spot notice and minimum runtime (both None without a policy)."""
    with connection.cursor() as cur:
        cur.execute(_POLICY_SQL, [pool_pk])
        row = cur.fetchone()
    return SpotPolicy(*row) if row else SpotPolicy()


def with_notice(
    request: PlacementRequest, notice: timedelta | None, now: datetime
) -> PlacementRequest | None:
    """Return the request starting no sooner than now + notice, or None when that leaves no window.

    Without a notice, or for a window that starts later anyway, the request is returned as it is.
    """
    if notice is None:
        return request
    earliest = int((now + notice).timestamp() * 1000)
    if request.during.start >= earliest:
        return request
    if earliest >= request.during.end:
        return None
    return dataclasses.replace(request, during=dataclasses.replace(request.during, start=earliest))


def youngest_start(policy: SpotPolicy, at: datetime, *, honour_min_runtime: bool = True) -> datetime | None:
    """Return the latest start spot work may have to be taken at `at` (None: any may be taken)."""
    if not honour_min_runtime or policy.min_runtime is None:
        return None
    return at - policy.min_runtime


def duration_text(value: timedelta) -> str:
    """Return a duration as the API writes it: 90m, 2h, 45s."""
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def notice_condition(preempted: dict, notice: timedelta) -> dict:
    """Return the PreemptAt condition a victim carries during its notice, from its Preempted condition."""
    return {
        **preempted,
        "type": PREEMPT_AT,
        "message": f"{preempted['message']} (spotNotice {duration_text(notice)})",
    }


def starts_later_condition(request: PlacementRequest, notice: timedelta) -> dict:
    """Return the condition of a regular booking that starts when the spot work it needs has left."""
    at = to_datetime(request.during.start)
    stamp = at.strftime("%Y-%m-%dT%H:%MZ")
    return {
        "type": STARTS_LATER,
        "status": "True",
        "reason": STARTS_LATER_REASON,
        "message": f"starts at {stamp}: spot work there has until then (spotNotice {duration_text(notice)})",
        "at": at.isoformat(),
    }


_GIVE_NOTICE_SQL = """
UPDATE capacity_reservation r
   SET conditions = (SELECT coalesce(jsonb_agg(x), '[]'::jsonb) FROM jsonb_array_elements(r.conditions) x
                      WHERE x->>'type' <> 'PreemptAt') || jsonb_build_array(c.condition),
       updated_at = %(now)s
  FROM unnest(%(ids)s::bigint[], %(conditions)s::jsonb[]) AS c(id, condition)
 WHERE r.id = c.id
"""


def give_notice(
    locked: Sequence[int], taken: Sequence[dict], at: datetime, notice: timedelta, now: datetime
) -> None:
    """Take the locked victims back at `at` after a notice: they stay placed until then.

    What runs before `at` stays live and ends then (a release meanwhile still ends it sooner); what
    would only start from `at` on never runs. Quota stays charged until finish_due returns it.
    `taken` are their Preempted conditions, written as PreemptAt ones.
    """
    live = Allocation.objects.filter(reservation__in=locked, released_at__isnull=True)
    end_allocations(live.filter(starts_at__gte=at), at)
    end_allocations(live.filter(starts_at__lt=at), at, mark_released=False)
    live.filter(starts_at__lt=at, ends_at__gt=at).update(ends_at=at)
    conditions = [json.dumps(notice_condition(c, notice)) for c in taken]
    with connection.cursor() as cur:
        cur.execute(_GIVE_NOTICE_SQL, {"now": now, "ids": list(locked), "conditions": conditions})


# Placed reservations whose notice is over: preempted as of their preemptAt, the PreemptAt
# condition now Preempted. Rows another transaction holds are left to the next round.
_DUE_SQL = """
WITH due AS (
  SELECT r.id, c.condition FROM capacity_reservation r
   CROSS JOIN LATERAL (SELECT x AS condition FROM jsonb_array_elements(r.conditions) x
                        WHERE x->>'type' = 'PreemptAt' LIMIT 1) c
   WHERE r.status = 'placed' AND r.conditions @> '[{"type": "PreemptAt"}]'
     AND (c.condition->>'at')::timestamptz <= %(now)s
   ORDER BY r.id FOR UPDATE OF r SKIP LOCKED
)
UPDATE capacity_reservation r
   SET status = 'preempted', released_at = (due.condition->>'at')::timestamptz, updated_at = %(now)s,
       conditions = jsonb_build_array(due.condition || jsonb_build_object(
         'type', 'Preempted', 'message', regexp_replace(due.condition->>'message', ' \\(spotNotice [^)]*\\)$', '')))
  FROM due WHERE r.id = due.id
RETURNING r.id, r.released_at
"""


@transaction.atomic
def finish_due(now: datetime | None = None) -> list[int]:
    """Mark preempted the reservations whose notice has run out, their quota returned and their
    allocations released as of then; return their ids."""
    with connection.cursor() as cur:
        cur.execute(_DUE_SQL, {"now": now or datetime.now(UTC)})
        done = cur.fetchall()
    by_time: dict[datetime, list[int]] = defaultdict(list)
    for pk, at in done:
        by_time[at].append(pk)
    for at, pks in sorted(by_time.items()):
        refund(pks, at)
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE capacity_allocation SET released_at = %s WHERE reservation_id = ANY(%s) AND released_at IS NULL",
                [at, pks],
            )
    return sorted(pk for pk, _at in done)


def notice_of(duration: timedelta) -> Notice:
    """Return the notice of `duration` as placement and take_back give it."""
    return Notice(
        duration,
        start=lambda request, now: with_notice(request, duration, now),
        give=lambda locked, taken, at, now: give_notice(locked, taken, at, duration, now),
        starts_later=lambda request: starts_later_condition(request, duration),
    )


def _spares(pool: PoolRow, at: datetime) -> datetime | None:
    return youngest_start(spot_policy(pool.pk), at)


def _notice(pool: PoolRow) -> Notice | None:
    duration = spot_policy(pool.pk).notice
    return notice_of(duration) if duration else None


def _asks(pool: PoolRow) -> bool:
    return True  # the pool's spotNotice and spotMinRuntime are read fresh, only once work may be taken back


NOTICE = Rule("notice", applies=_asks, spares=_spares, notice=_notice)
RULES = (NOTICE,)
