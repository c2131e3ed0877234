"""What a node's agent needs to know: which reservation holds each device now, which holds it next.

Read in two queries (the node with its devices, then their live bookings), whatever the node's
history; the answer's ETag changes exactly when something in it does (its time aside).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from capacity.placement import NOT_FOUND, CapacityError
from inventory.models import Device, Node
from inventory.states import node_states

# Each live booking of the node's devices (ending after now), soonest first, with its owner.
_BOOKINGS_SQL = """
SELECT b.device_id, lower(b.during), upper(b.during), a.reservation_id, a.instance_id, r.priority,
       r.binding, t.slug
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
  LEFT JOIN inventory_tenant t ON t.id = r.tenant_id
 WHERE b.device_id = ANY(%s) AND upper(b.during) > %s
 ORDER BY lower(b.during), b.device_id
"""


def assignments(node_name: str, now: datetime | None = None) -> tuple[dict[str, Any], str]:
    """Return a node's assignments as of `now` and their ETag; raise NOT_FOUND for an unknown node."""
    now = now or timezone.now()
    node = Node.objects.filter(name=node_name).prefetch_related("taints", "conditions").first()
    if node is None:
        raise CapacityError(NOT_FOUND, f"no node {node_name}")
    devices = list(Device.objects.filter(node=node).select_related("parent").order_by("index", "uuid"))
    held: dict[int, dict] = {}
    upcoming: dict[int, dict] = {}
    lease = None
    with connection.cursor() as cur:
        cur.execute(_BOOKINGS_SQL, [[d.pk for d in devices], now])
        for device, start, end, reservation, instance, priority, binding, tenant in cur.fetchall():
            owner = {"reservationId": reservation, "tenantId": tenant}
            if instance:
                owner["instanceId"] = instance
            if start <= now:
                held.setdefault(device, {**owner, "priority": priority or "regular", "end": _iso(end)})
                if binding == "node":
                    lease = reservation
            else:
                upcoming.setdefault(device, {**owner, "start": _iso(start)})
    body = {
        "node": node.name,
        "state": {
            "name": node_states(node)[0].name,
            "cordoned": node.cordoned,
            "maintenance": node.maintenance,
            "draining": node.drain_started_at is not None,
            "lease": lease,
        },
        "devices": [
            {
                "uuid": d.uuid,
                "index": d.index,
                "class": d.device_class,
                "parent": d.parent.uuid if d.parent_id else None,
                "now": held.get(d.pk),
                "next": upcoming.get(d.pk),
            }
            for d in devices
        ],
    }
    tag = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    return {
        "node": node.name,
        "asOf": _iso(now),
        **{k: v for k, v in body.items() if k != "node"},
    }, f'"{tag}"'


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
