"""Give lent GPUs back when their owner's own processes show up in its agent's samples (issue 46).

An agent that attributes processes (inventory.attribution) says in each GPU's sample whose its
processes are. On a GPU lent to spot work, a process that is not the lent work's (the owner's, or
one the agent could not attribute: the owner comes first) means the owner is using its GPUs again:
the lent work is taken back (reason ReclaimedByOwner, cause `processes`) now or after the pool's
spotNotice, and the owner of that GPU is no longer `Idle`. Samples without attribution (older
agents) never reclaim. The node report runs this for its node once it has committed (a pool rule
at REPORTED, capacity.rules); the worker runs it each round for every node, in case that one failed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from capacity.port import Reservation, Rule, retry_on_conflict

from .reclaim import OWNER_PROCESSES, end_idle, every_pool, take_back_lent

# A sample older than this says nothing of now (an agent reports every 30 s).
FRESH = timedelta(minutes=2)

log = logging.getLogger(__name__)

# Lent work, not already under notice, one of whose lent GPUs' latest fresh sample (taken since the
# work started there) attributes a process to anyone else; with the owner of that GPU now.
_SHOWN_SQL = """
SELECT s.id, oa.reservation_id
  FROM capacity_reservation s
  JOIN capacity_allocation a ON a.reservation_id = s.id AND a.released_at IS NULL
  JOIN capacity_devicebooking b ON b.allocation_id = a.id AND b.layer = 1 AND b.during @> %(now)s::timestamptz
  CROSS JOIN LATERAL (
       SELECT x.process_owners FROM inventory_devicesample x
        WHERE x.device_id = b.device_id AND x.minute > %(since)s::timestamptz AND x.minute <= %(now)s::timestamptz
          AND x.minute >= date_trunc('minute', lower(b.during))
        ORDER BY x.minute DESC LIMIT 1) l
  LEFT JOIN capacity_devicebooking o ON o.device_id = b.device_id AND o.layer = 0 AND o.during @> %(now)s::timestamptz
  LEFT JOIN capacity_allocation oa ON oa.id = o.allocation_id
 WHERE s.status = 'placed' AND s.priority = 'spot' AND cardinality(s.lent_from) > 0
   AND NOT s.conditions @> '[{"type": "PreemptAt"}]'
   AND (%(devices)s::bigint[] IS NULL OR b.device_id = ANY(%(devices)s::bigint[]))
   AND l.process_owners IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(l.process_owners) w WHERE w <> s.id)
"""
_NODE_DEVICES_SQL = "SELECT array_agg(id) FROM inventory_device WHERE node_id = %s"


def reclaim_for_processes(node_id: int | None = None, now: datetime | None = None) -> tuple[int, ...]:
    """Take back lent work whose GPUs (on this node; None: anywhere) show their owner's processes.

    Return the spot reservations taken back or given notice.
    """
    now = now or timezone.now()
    devices = None
    with connection.cursor() as cur:
        if node_id is not None:
            cur.execute(_NODE_DEVICES_SQL, [node_id])
            devices = cur.fetchone()[0] or []
        cur.execute(_SHOWN_SQL, {"now": now, "since": now - FRESH, "devices": devices})
        shown: dict[int, set[int]] = defaultdict(set)
        for work, owner in cur.fetchall():
            shown[work].update([owner] if owner is not None else [])
    taken: list[int] = []
    for work, owners in sorted(shown.items()):
        taken += _take_back(work, sorted(owners), now)
    return tuple(sorted(taken))


@retry_on_conflict
@transaction.atomic
def _take_back(work: int, owners: list[int], now: datetime) -> tuple[int, ...]:
    """End the owners' Idle, then take their lent work back (the owners' rows first, as reclaim does)."""
    for owner in Reservation.objects.select_for_update(of=("self",)).filter(pk__in=owners).order_by("pk"):
        end_idle(owner, now, OWNER_PROCESSES, lent=True)
    return take_back_lent([work], now, OWNER_PROCESSES, by=owners[0] if owners else None)


def reclaim_after_report(node_id: int) -> None:
    """Reclaim for the processes a node's report just stored; a failure is left to the worker's round."""
    try:
        reclaim_for_processes(node_id)
    except Exception:  # the report is taken; the worker's round retries within its interval
        log.exception("reclaim after node %s's report failed; the worker's round retries it", node_id)


PROCESSES = Rule("reclaim.processes", applies=every_pool, reported=reclaim_after_report)
RULES = (PROCESSES,)
