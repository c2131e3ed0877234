"""Idle bookings: running reservations whose GPUs did almost nothing for hours, named with the evidence.

A placed reservation that has run for at least its pool's idleWarnAfter (IDLE_AFTER for a pool
without a policy), whose booked devices' samples over that long average under IDLE_GPU_PERCENT,
and whose samples cover at least half of those device-minutes (silence is not idleness: a node
whose agent stopped says nothing), gets the condition `Idle` ("GPUs 0–7 at 1 % mean since 10:02"):
its owner is warned (reservation.idle, mail where configured) and its node's agent writes
reservations/ID.idle. One that is busy again loses it. Spot work and whole-node leases follow the
same rule. With the pool's idleReleaseAfter set (IDLE_RELEASE_AFTER without a policy, off by
default), one still idle that long after it was marked is released, the evidence its reason,
unless its owner marked it keepWhenIdle. A pool whose idleWarnAfter is off marks nothing idle.
usage's worker job runs this every few minutes (usage/jobs.py); docs/policy.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from capacity.port import IDLE, RECLAIMED, Policy, Reservation, atoms_text, defaults, stored_policies
from config import actions

_CANDIDATES_SQL = """
SELECT a.reservation_id, n.name, array_agg(DISTINCT d.uuid), avg(x.gpu_percent), count(x.gpu_percent),
       count(DISTINCT b.device_id)
  FROM capacity_reservation r
  JOIN capacity_allocation a ON a.reservation_id = r.id AND a.released_at IS NULL
  JOIN capacity_devicebooking b ON b.allocation_id = a.id AND b.during @> %(now)s::timestamptz
  JOIN inventory_device d ON d.id = b.device_id
  JOIN inventory_node n ON n.id = d.node_id
  LEFT JOIN inventory_devicesample x ON x.device_id = b.device_id AND x.minute >= %(since)s AND x.minute < %(now)s
 WHERE r.status = 'placed' AND r.starts_at <= %(since)s
   -- A booking awaiting approval cannot have started; an approved one counts from its approval.
   AND NOT r.conditions @> '[{"type": "AwaitingApproval"}]'::jsonb
   AND coalesce((SELECT (c->>'at')::timestamptz FROM jsonb_array_elements(r.conditions) c
                  WHERE c->>'type' = 'Approved' LIMIT 1), '-infinity') <= %(since)s
   AND (%(only)s::bigint[] IS NULL OR r.pool_id = ANY(%(only)s::bigint[]))
   AND r.pool_id <> ALL(%(other)s::bigint[])
 GROUP BY a.reservation_id, n.name
"""


def _windows(policies: dict[int, Policy]) -> list[tuple[timedelta, list[int] | None, list[int]]]:
    """Return each idle window to ask about with the pools it covers: (after, only these or None, not these).

    Pools without a policy share the site's IDLE_AFTER (None: every pool but those with one); pools
    with a policy are grouped by their idleWarnAfter; those whose warning is off are not asked about.
    """
    windows: dict[timedelta, list[int]] = defaultdict(list)
    for pool, policy in policies.items():
        if policy.idle_warn_after is not None:
            windows[policy.idle_warn_after].append(pool)
    asked = [(settings.IDLE_AFTER, None, sorted(policies))]
    return asked + [(after, sorted(pools), []) for after, pools in sorted(windows.items())]


def lenders() -> set[int]:
    """Return the reservations whose idle GPUs spot work runs on now (policy.lending)."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT DISTINCT unnest(lent_from) FROM capacity_reservation
                WHERE status = 'placed' AND priority = 'spot' AND cardinality(lent_from) > 0"""
        )
        return {pk for (pk,) in cur.fetchall()}


def reclaimed_at(reservations: list[int]) -> dict[int, datetime]:
    """Return when each of these reservations last took its lent GPUs back (those that did)."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT r.id, max((c->>'at')::timestamptz) FROM capacity_reservation r
                CROSS JOIN LATERAL jsonb_array_elements(r.conditions) c
                WHERE r.id = ANY(%s) AND r.conditions @> %s::jsonb AND c->>'type' = %s GROUP BY r.id""",
            [reservations, f'[{{"type": "{RECLAIMED}"}}]', RECLAIMED],
        )
        return dict(cur.fetchall())


def mark_idle(now: datetime) -> tuple[int, int]:
    """Give `Idle` to the running reservations idle for their pool's idleWarnAfter and take it from busy ones.

    Return (newly idle, no longer idle).
    """
    policies = stored_policies()
    found: dict[int, list[tuple[str, list[str], float | None, int, int]]] = defaultdict(list)
    minutes_of: dict[int, float] = {}
    since_of: dict[int, datetime] = {}
    with connection.cursor() as cur:
        for after, only, other in _windows(policies):
            since = now - after
            cur.execute(_CANDIDATES_SQL, {"now": now, "since": since, "only": only, "other": other})
            for rid, node, uuids, mean, samples, devices in cur.fetchall():
                found[rid].append((node, uuids, mean, samples, devices))
                minutes_of[rid], since_of[rid] = after.total_seconds() / 60, since
    idle: dict[int, str] = {}
    for rid, parts in found.items():
        samples = sum(p[3] for p in parts)
        devices = sum(p[4] for p in parts)
        if samples == 0 or samples < devices * minutes_of[rid] / 2:
            continue  # too few samples to say
        mean = sum((p[2] or 0) * p[3] for p in parts) / samples
        if mean < settings.IDLE_GPU_PERCENT:
            where = "; ".join(f"{node} {atoms_text(node, uuids)}" for node, uuids, *_ in parts)
            idle[rid] = f"{where} at {mean:.0f} % mean since {since_of[rid]:%H:%M} UTC"
    # An owner that took its lent GPUs back is judged only on samples since (policy.reclaim).
    for rid, at in reclaimed_at(list(idle)).items():
        if at > since_of[rid]:
            del idle[rid]
    now_idle = set(
        Reservation.objects.filter(status="placed", conditions__contains=[{"type": IDLE}]).values_list(
            "pk", flat=True
        )
    )
    # A booking lending its GPUs keeps Idle: their load is the lent spot work's, not its owner's.
    # It is given back by a reclaim (or its release), which ends Idle (policy.reclaim).
    lending = lenders()
    added = removed = 0
    for rid in sorted(set(idle) | now_idle):
        with transaction.atomic():
            reservation = Reservation.objects.select_for_update().filter(pk=rid, status="placed").first()
            if reservation is None:
                continue
            kept = [c for c in reservation.conditions if c.get("type") != IDLE]
            if rid in idle:
                if len(kept) != len(reservation.conditions):
                    continue  # already idle: the evidence stays as first said
                kept.append(
                    {
                        "type": IDLE,
                        "status": "True",
                        "reason": "LowUtilization",
                        "message": idle[rid],
                        "since": now.isoformat(),
                    }
                )
                added += 1
            elif len(kept) == len(reservation.conditions) or rid in lending:
                continue
            else:
                removed += 1
            Reservation.objects.filter(pk=rid).update(conditions=kept, updated_at=now)
    _release_long_idle(idle, now, policies)
    return added, removed


def _release_long_idle(idle: dict[int, str], now: datetime, policies: dict[int, Policy]) -> list[int]:
    """Release what has been Idle its pool's idleReleaseAfter and still is, naming the evidence.

    A booking its owner marked keepWhenIdle stays (and stays Idle); a pool whose release is off
    releases nothing.
    """
    site = defaults()
    if site.idle_release_after is None and all(p.idle_release_after is None for p in policies.values()):
        return []
    released = []
    for reservation in Reservation.objects.filter(
        pk__in=list(idle), status="placed", keep_when_idle=False, conditions__contains=[{"type": IDLE}]
    ):
        after = policies.get(reservation.pool_id, site).idle_release_after
        if after is None:
            continue
        condition = next(c for c in reservation.conditions if c.get("type") == IDLE)
        since = datetime.fromisoformat(condition.get("since") or now.isoformat())
        if now - since >= after:
            actions.release(
                reservation.pk,
                now=now,
                reason=f"idle for {after}: {condition['message']}",
                by="idle policy",
                why="IdlePolicy",
            )
            released.append(reservation.pk)
    return released
