"""Give lent GPUs back: the spot work running on an idle owner's GPUs is preempted (issue 46, item 4).

The owner reclaims them (`POST /api/v1/reservations/{id}/reclaim`, policy.api.reclaim; the button
on its page, policy.views), or its processes show up on them (policy.reclaim_processes): its `Idle` condition ends and the
lent work is taken back now, or at now + the pool's spotNotice (it keeps the GPUs, shared with the
owner, until then; a reclaim during the notice gives no second one). The worker takes back, each
round, lent work whose lenders no longer lend: released (a release takes it back at once), busy
again (no longer `Idle`), kept when idle, or no longer holding the lent devices (moved by a repair
or drain).
Lent work's preemption does not wait for spotMinRuntime: the owner always comes first.
A pool rule at ENDED (capacity.rules): a release takes its booking's lent work back at once.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from capacity.port import (
    EVERYONE,
    IDLE,
    PREEMPTED_CONDITION,
    RECLAIMED,
    SEVENTHS,
    AnyReservation,
    Owner,
    Reservation,
    Rule,
    Scope,
    get,
    gpu_hours_sql,
    lent_notices,
    retry_on_conflict,
    take_back,
    tell,
)
from trail.context import stamp

from .notice import finish_due, notice_of, spot_policy

RECLAIMED_BY_OWNER = "ReclaimedByOwner"
BY_REQUEST, OWNER_BUSY, OWNER_ENDED = "request", "busy", "ended"
OWNER_PROCESSES = "processes"  # the owner's processes showed up (policy.reclaim_processes)
# An owner whose booking ended has no GPUs to share: its lent work ends at once, notice or not.
_AT_ONCE = {OWNER_ENDED}

_IDLE = json.dumps([{"type": IDLE}])

_POOLS_SQL = (
    "SELECT pool_id, array_agg(id ORDER BY id) FROM capacity_reservation WHERE id = ANY(%s) GROUP BY 1"
)

# Lent work one of whose lenders no longer lends: not placed, kept when idle, not Idle, or no
# longer holding (layer 0) a device the work holds lent for what is left of its window. The
# reason is the first lender found that way and whether it ended.
_LAPSED_SQL = """
SELECT s.id, l.id, l.ended
  FROM capacity_reservation s
  CROSS JOIN LATERAL (
       SELECT x.id, r.id IS NULL OR r.status <> 'placed' AS ended
         FROM unnest(s.lent_from) AS x(id)
         LEFT JOIN capacity_reservation r ON r.id = x.id
        WHERE r.id IS NULL OR r.status <> 'placed' OR r.keep_when_idle OR NOT r.conditions @> %(idle)s::jsonb
        ORDER BY x.id LIMIT 1) AS l
 WHERE s.status = 'placed' AND s.priority = 'spot' AND s.lent_from <> '{}'  -- reservation_lent_work_idx
   AND NOT s.conditions @> '[{"type": "PreemptAt"}]'
UNION ALL
SELECT DISTINCT s.id, NULL::bigint, true
  FROM capacity_reservation s
  JOIN capacity_allocation a ON a.reservation_id = s.id AND a.released_at IS NULL
  JOIN capacity_devicebooking b ON b.allocation_id = a.id AND b.layer = 1
 WHERE s.status = 'placed' AND s.priority = 'spot' AND s.lent_from <> '{}'
   AND upper(b.during) > %(now)s::timestamptz AND NOT s.conditions @> '[{"type": "PreemptAt"}]'
   AND NOT EXISTS (
       SELECT 1 FROM capacity_devicebooking o JOIN capacity_allocation oa ON oa.id = o.allocation_id
        WHERE o.device_id = b.device_id AND o.layer = 0 AND oa.reservation_id = ANY(s.lent_from)
          AND o.during @> tstzrange(greatest(lower(b.during), %(now)s::timestamptz), upper(b.during), '[)'))
"""


@dataclass(frozen=True)
class Reclaimed:
    """What a reclaim did: the lender, the lent work it took back or gave notice (none: nothing to
    do), and when lent work under notice leaves (None: none is)."""

    reservation: Reservation | AnyReservation
    preempted: tuple[int, ...]
    preempt_at: datetime | None = None


def reclaimed_condition(at: datetime, cause: str) -> dict:
    """Return the condition of lent work taken back for its owner (the owner is never named)."""
    why = {
        BY_REQUEST: "reclaimed by the owner of the lent GPUs",
        OWNER_BUSY: "reclaimed: the owner of the lent GPUs is using them again",
        OWNER_ENDED: "reclaimed: the owner's booking of the lent GPUs ended",
        OWNER_PROCESSES: "reclaimed: the owner's processes showed up on the lent GPUs",
    }[cause]
    return {
        "type": PREEMPTED_CONDITION,
        "status": "True",
        "reason": RECLAIMED_BY_OWNER,
        "message": f"{why} at {at.strftime('%Y-%m-%dT%H:%MZ')}",
        "at": at.isoformat(),
        "cause": cause,
    }


def take_back_lent(victims: list[int], now: datetime, cause: str, by: int | None = None) -> tuple[int, ...]:
    """Take lent work back for its owners (inside the caller's transaction): bookings cut, quota returned.

    Where the pool has a spotNotice (and the owner's booking goes on) the work is given notice
    instead: it keeps the GPUs, shared with the owner, until now + spotNotice (its PreemptAt
    condition); the worker ends it then (finish_due). Return the reservations taken back or given
    notice (one ended meanwhile, or already under notice, is skipped: no second notice).
    """
    if not victims:
        return ()
    with connection.cursor() as cur:
        cur.execute(_POOLS_SQL, [sorted(victims)])
        by_pool = sorted(cur.fetchall())
    done: list[int] = []
    for pool, pks in by_pool:
        notice = None if cause in _AT_ONCE else spot_policy(pool).notice
        at = now + notice if notice else now
        condition = reclaimed_condition(at, cause)
        given = notice_of(notice) if notice is not None else None
        take_back(pks, at, Owner(reservation_pk=by), now, notice=given, condition=condition)
        marked = json.dumps([{"reason": RECLAIMED_BY_OWNER, "at": condition["at"], "cause": cause}])
        with connection.cursor() as cur:
            cur.execute(
                """SELECT id, (SELECT slug FROM inventory_pool p WHERE p.id = pool_id), status = 'preempted'
                     FROM capacity_reservation WHERE id = ANY(%s) AND conditions @> %s::jsonb""",
                [pks, marked],
            )
            rows = cur.fetchall()
        count_lent_hours([pk for pk, _slug, ended in rows if ended])  # noticed work: when it ends
        tell("reclaims", dict(Counter(slug for _pk, slug, _ended in rows)), cause)
        done += [pk for pk, _slug, _ended in rows]
    return tuple(sorted(done))


# The GPU-hours lent work's bookings (layer 1) hold (capacity.gpu_hours: a lent slice its share),
# per pool: once the work has ended (its bookings cut at its end), the hours it ran on lent GPUs.
_LENT_HOURS_SQL = f"""
SELECT p.slug, sum({gpu_hours_sql("b")})
  FROM capacity_allocation a
  JOIN capacity_devicebooking b ON b.allocation_id = a.id AND b.layer = 1
  JOIN capacity_reservation r ON r.id = a.reservation_id
  JOIN inventory_pool p ON p.id = r.pool_id
 WHERE a.reservation_id = ANY(%s)
 GROUP BY p.slug
"""


def count_lent_hours(ended: list[int]) -> None:
    """Count the GPU-hours these ended reservations ran on lent GPUs (berth_gpu_hours_lent_total)."""
    if not ended:
        return
    with connection.cursor() as cur:
        cur.execute(_LENT_HOURS_SQL, [sorted(ended)])
        tell("lent_gpu_hours", {slug: float(hours) for slug, hours in cur.fetchall() if hours})


def lent_work(lenders: list[int]) -> list[int]:
    """Return the running spot reservations lent these lenders' GPUs (those under notice too)."""
    return sorted(lent_notices(lenders))


def end_idle(owner: Reservation, now: datetime, cause: str, *, lent: bool) -> None:
    """End the locked owner's `Idle` and note the reclaim (`Reclaimed`), when it was Idle or lent.

    The idle check does not mark it Idle again on samples from before `now` (usage/idle.py): a
    window of lent work's quiet minutes is no reason to lend its GPUs again at once.
    """
    kept = [c for c in owner.conditions if c.get("type") not in (IDLE, RECLAIMED)]
    if len(kept) == len(owner.conditions) and not lent:
        return
    why = "its owner asked" if cause == BY_REQUEST else "its owner's processes showed up on them"
    taken_at = now.strftime("%Y-%m-%dT%H:%MZ")
    kept.append(
        {
            "type": RECLAIMED,
            "status": "True",
            "reason": RECLAIMED_BY_OWNER,
            "message": f"idle GPUs taken back at {taken_at}: {why}",
            "at": now.isoformat(),
        }
    )
    owner.conditions = kept
    owner.save(update_fields=["conditions", "updated_at"])


@retry_on_conflict
@transaction.atomic
def reclaim(reservation_id: int | str, *, scope: Scope = EVERYONE, now: datetime | None = None) -> Reclaimed:
    """Take the owner's lent GPUs back now and end its `Idle` condition.

    A reservation another tenant owns is NOT_FOUND; one that lends nothing has nothing to do.
    """
    now = now or timezone.now()
    stamp()  # the owner's and the lent work's events name who reclaimed, and in which request
    found = get(reservation_id, scope=scope)
    if not isinstance(found, Reservation):
        return Reclaimed(found, ())  # moved to history: it lends nothing
    # The owner first (a lending commit holds it FOR SHARE: this waits for it, then sees its work).
    owner = Reservation.objects.select_for_update(of=("self",)).get(pk=found.pk)
    victims = lent_work([owner.pk])
    end_idle(owner, now, BY_REQUEST, lent=bool(victims))
    preempted = take_back_lent(victims, now, BY_REQUEST, by=owner.pk)
    leaving = [at for at in lent_notices([owner.pk]).values() if at is not None]
    return Reclaimed(owner, preempted, max(leaving) if leaving else None)


def reclaim_lapsed(now: datetime | None = None) -> int:
    """Take back lent work whose lenders no longer lend (the worker's round); return how many."""
    now = now or timezone.now()
    with connection.cursor() as cur:
        cur.execute(_LAPSED_SQL, {"idle": _IDLE, "now": now})
        lapsed: dict[int, bool] = {}
        for pk, _lender, ended in cur.fetchall():
            lapsed[pk] = lapsed.get(pk, False) or bool(ended)
    taken = 0
    for cause in (OWNER_ENDED, OWNER_BUSY):
        victims = [pk for pk, ended in lapsed.items() if ended == (cause == OWNER_ENDED)]
        if victims:
            with transaction.atomic():
                taken += len(take_back_lent(victims, now, cause))
    return taken


# The pool's GPU-hours of lent bookings (layer 1, live or moved) in a window (capacity.gpu_hours: a
# lent slice its share), and the lent work its owners took back meanwhile.
_WEEK_SQL = f"""
SELECT coalesce(sum(b.gpu_sevenths * extract(epoch FROM upper(b.during * w.r) - lower(b.during * w.r))
                    / {SEVENTHS * 3600}), 0),
       (SELECT count(*) FROM capacity_reservation_all x
         WHERE x.pool_id = %(pool)s AND x.status = 'preempted' AND x.released_at <@ w.r
           AND x.conditions @> '[{{"reason": "ReclaimedByOwner"}}]'::jsonb)
  FROM (SELECT tstzrange(%(since)s, %(now)s, '[)') AS r) w
  LEFT JOIN capacity_devicebooking_all b ON b.layer = 1 AND b.during && w.r
   AND EXISTS (SELECT 1 FROM inventory_device d JOIN inventory_node n ON n.id = d.node_id
                WHERE d.id = b.device_id AND n.pool_id = %(pool)s)
 GROUP BY w.r
"""


def lending_since(pool_pk: int, since: datetime, now: datetime) -> tuple[float, int]:
    """Return the pool's GPU-hours lent to spot work from `since` to `now`, and how many lent
    reservations were taken back for their owners meanwhile."""
    with connection.cursor() as cur:
        cur.execute(_WEEK_SQL, {"pool": pool_pk, "since": since, "now": now})
        hours, reclaimed = cur.fetchone()
    return round(float(hours), 1), int(reclaimed)


def expire_notices() -> None:
    """Mark preempted the work whose notice ran out (the worker's round, before it releases ended
    windows); lent work among it counts the hours it ran on lent GPUs then."""
    count_lent_hours(finish_due())


def _ended(pks: list[int], lent: list[int], now: datetime) -> None:
    """Take back the lent work of bookings a release ended; count the hours lent work among them ran lent."""
    take_back_lent(lent_work(list(pks)), now, OWNER_ENDED)
    count_lent_hours(list(lent))


def every_pool(pool) -> bool:
    return True  # ENDED and REPORTED read no pool: lent work outlives its pool's lendIdle


RECLAIM = Rule("reclaim", applies=every_pool, ended=_ended)
RULES = (RECLAIM,)
