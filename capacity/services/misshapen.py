"""Allocations whose atoms no longer match their devices: the one predicate check_capacity reports
as drift and BookingRepair (`repair.broken`) moves, so a reshape that found no room is retried.

A live booking of an unverified device, or of a device on another node than its allocation, or of
a split GPU without each of its slices; and an allocation of a placed reservation (not a lease)
whose atoms per class differ from what its request asks of one member.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from capacity.models import Reservation

# The clock and the pools the caller asks about; without them, the database's now and every pool.
_WHEN = "coalesce(%(now)s::timestamptz, now())"
_WHERE_POOL = "(%(pools)s::bigint[] IS NULL OR an.pool_id = ANY(%(pools)s::bigint[]))"

_SHAPE_SQL = f"""
SELECT b.allocation_id, a.reservation_id, r.status, d.uuid,
       CASE WHEN NOT d.verified THEN 'is booked while unverified'
            WHEN d.node_id <> a.node_id THEN 'is on node ' || dn.name || ', not the allocation''s ' || an.name
            ELSE 'is booked whole but its slice ' || (
                   SELECT min(c.uuid) FROM inventory_device c
                    WHERE c.parent_id = d.id AND c.verified AND NOT EXISTS (
                          SELECT 1 FROM capacity_devicebooking cb
                           WHERE cb.allocation_id = b.allocation_id AND cb.device_id = c.id)) || ' is not'
       END
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
  JOIN inventory_device d ON d.id = b.device_id
  JOIN inventory_node dn ON dn.id = d.node_id
  JOIN inventory_node an ON an.id = a.node_id
 WHERE upper(b.during) > {_WHEN} AND a.released_at IS NULL AND {_WHERE_POOL}
   AND (NOT d.verified OR d.node_id <> a.node_id
        OR EXISTS (SELECT 1 FROM inventory_device c
                    WHERE c.parent_id = d.id AND c.verified AND NOT EXISTS (
                          SELECT 1 FROM capacity_devicebooking cb
                           WHERE cb.allocation_id = b.allocation_id AND cb.device_id = c.id)))
 ORDER BY b.allocation_id, d.uuid
"""

# Each live allocation of a placed reservation that is not a lease whose atoms per class (its
# booked devices whose parent it does not book too, as a reservation lists its atoms) differ from
# what its stored request asks of one member (a device's class defaults to gpu, its count to 1,
# as validate_request reads them). Classes in code-point order, as Python sorts them.
_CLASSES_SQL = f"""
WITH live AS (
  SELECT a.id, a.reservation_id, r.request
    FROM capacity_allocation a
    JOIN capacity_reservation r ON r.id = a.reservation_id
    JOIN inventory_node an ON an.id = a.node_id
   WHERE a.released_at IS NULL AND a.ends_at > {_WHEN} AND r.status = 'placed' AND r.binding <> 'node'
     AND {_WHERE_POOL}
), have AS (
  SELECT l.id, d.device_class AS c, count(*) AS n
    FROM live l
    JOIN capacity_devicebooking b ON b.allocation_id = l.id AND upper(b.during) > {_WHEN}
    JOIN inventory_device d ON d.id = b.device_id
   WHERE NOT EXISTS (SELECT 1 FROM capacity_devicebooking p
                      WHERE p.allocation_id = b.allocation_id AND p.device_id = d.parent_id)
   GROUP BY 1, 2
), want AS (
  SELECT l.id, coalesce(e->>'class', 'gpu') AS c, sum(coalesce((e->>'count')::bigint, 1)) AS n
    FROM live l, jsonb_array_elements(coalesce(l.request->'placement'->'devices', '[]'::jsonb)) e
   GROUP BY 1, 2
)
SELECT l.id, l.reservation_id,
       coalesce((SELECT string_agg(h.n || ' ' || h.c, ', ' ORDER BY h.c COLLATE "C")
                   FROM have h WHERE h.id = l.id), 'none'),
       coalesce((SELECT string_agg(w.n || ' ' || w.c, ', ' ORDER BY w.c COLLATE "C")
                   FROM want w WHERE w.id = l.id), 'none')
  FROM live l
 WHERE EXISTS (SELECT 1 FROM have h FULL JOIN want w ON w.id = h.id AND w.c = h.c
                WHERE coalesce(h.id, w.id) = l.id AND h.n IS DISTINCT FROM w.n)
 ORDER BY l.id
"""


@dataclass(frozen=True)
class Misshapen:
    """One allocation whose atoms no longer match their devices, and why."""

    allocation: int
    reservation: int | None  # None: an instance's
    placed: bool  # its reservation reads placed
    why: str
    named: bool  # the audit names the reservation too (the per-class count)

    def drift(self) -> str:
        """Return the line check_capacity prints."""
        owner = f" of reservation {self.reservation}" if self.named else ""
        return f"allocation {self.allocation}{owner}: {self.why}"


def misshapen(pool_ids: Iterable[int] | None = None, now: datetime | None = None) -> list[Misshapen]:
    """Return the live allocations (in these pools; all without) whose atoms no longer match their devices."""
    params = {"now": now, "pools": None if pool_ids is None else sorted(set(pool_ids))}
    with connection.cursor() as cur:
        cur.execute(_SHAPE_SQL, params)
        found = [
            Misshapen(a, r, status == Reservation.Status.PLACED, f"device {uuid} {why}", named=False)
            for a, r, status, uuid, why in cur.fetchall()
        ]
        cur.execute(_CLASSES_SQL, params)
        found += [
            Misshapen(a, r, True, f"holds atoms {have}, its request asks {want}", named=True)
            for a, r, have, want in cur.fetchall()
        ]
    return found
