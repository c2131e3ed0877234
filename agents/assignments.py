"""What a node's agent needs to know: which reservation holds each device now, which holds it next.

Read in two queries (the node with its devices, then their live bookings) and, for a booking
marked Idle, one more for its pool's policy, whatever the node's history; the answer's ETag changes
exactly when something in it does (its time aside). A reservation marked Idle says so in `idle`
(docs/policy.md): the agent writes reservations/ID.idle; one given notice before preemption says
when in `preemptAt`: the agent writes reservations/ID.preempt. A device lent to spot work while its
owner is idle says which in `lent` (null otherwise): the owner still holds it in `now`. One a
maintenance window will take GPUs from says which in `maintenance` (its MaintenanceScheduled
condition): the agent writes reservations/ID.maintenance.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from capacity.port import EVERYONE, NOT_FOUND, CapacityError, Policy, policy_of
from inventory.models import Device, Node
from inventory.states import node_states

# Each live booking of the node's devices (ending after now), soonest first, with its owner; a
# lent booking (layer 1: spot work on an idle owner's GPUs, policy.lending) says so. A
# booking awaiting approval (policy.approval) is not handed out: its devices read as free here.
_BOOKINGS_SQL = """
SELECT b.layer, b.device_id, lower(b.during), upper(b.during), a.reservation_id, a.instance_id, r.priority,
       r.binding, t.slug, r.pool_id, r.keep_when_idle,
       (SELECT c FROM jsonb_array_elements(r.conditions) c WHERE c->>'type' = 'Idle' LIMIT 1),
       (SELECT c->>'at' FROM jsonb_array_elements(r.conditions) c WHERE c->>'type' = 'PreemptAt' LIMIT 1),
       (SELECT c FROM jsonb_array_elements(r.conditions) c
         WHERE c->>'type' = 'MaintenanceScheduled' AND c->>'status' = 'True' LIMIT 1)
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
  LEFT JOIN inventory_tenant t ON t.id = r.tenant_id
 WHERE b.device_id = ANY(%s) AND upper(b.during) > %s
   AND (r.id IS NULL OR NOT r.conditions @> '[{"type": "AwaitingApproval"}]'::jsonb)
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
    lent: dict[int, dict] = {}
    lease = None
    with connection.cursor() as cur:
        cur.execute(_BOOKINGS_SQL, [[d.pk for d in devices], now])
        rows = cur.fetchall()
    policies: dict[int, Policy] = {}
    for (
        layer,
        device,
        start,
        end,
        reservation,
        instance,
        priority,
        binding,
        tenant,
        pool,
        keep,
        idle,
        preempt,
        window,
    ) in rows:
        owner = {"reservationId": reservation, "tenantId": tenant}
        if instance:
            owner["instanceId"] = instance
        if layer:
            # Lent GPUs run the spot work now too; once reclaimed, they are the owner's alone. Given
            # notice by a reclaim, it says until when: the spot work's agent writes ID.preempt, the
            # owner's sees when its GPUs are its own again.
            if start <= now:
                lent.setdefault(
                    device,
                    {
                        **owner,
                        "priority": priority or "spot",
                        "end": _iso(end),
                        "preemptAt": _iso(datetime.fromisoformat(preempt)) if preempt else None,
                    },
                )
            continue
        if start <= now:
            if isinstance(idle, str):
                idle = json.loads(idle)
            if idle is not None and pool not in policies:
                policies[pool] = policy_of(pool)  # only for an idle booking: rare
            held.setdefault(
                device,
                {
                    **owner,
                    "priority": priority or "regular",
                    "end": _iso(end),
                    "idle": _idle(idle, keep, policies.get(pool)),
                    # Spot work given notice (policy.notice): the agent writes reservations/ID.preempt.
                    "preemptAt": _iso(datetime.fromisoformat(preempt)) if preempt else None,
                    # A maintenance window takes its GPUs (maintenance/notice.py): ID.maintenance.
                    "maintenance": _window(window),
                },
            )
            if binding == "node":
                lease = reservation
        else:
            upcoming.setdefault(device, {**owner, "start": _iso(start)})
    body = {
        "node": node.name,
        "state": {
            # The agent reads its node as operators do (a dedication does not stop it being schedulable).
            "name": node_states(node, EVERYONE)[0].name,
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
                "lent": lent.get(d.pk),
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


def _window(condition: dict | str | None) -> dict | None:
    """Return what the agent writes to reservations/ID.maintenance: the window, when, why, where."""
    if condition is None:
        return None
    if isinstance(condition, str):
        condition = json.loads(condition)
    return {
        "windowId": condition.get("window"),
        "start": _iso(datetime.fromisoformat(condition["at"])),
        "end": _iso(datetime.fromisoformat(condition["end"])),
        "reason": condition.get("windowReason", ""),
        "nodes": condition.get("nodes", []),
        "message": condition.get("message", ""),
    }


def _idle(condition: dict | None, keep: bool | None, policy: Policy | None) -> dict | None:
    """Return what the agent writes to reservations/ID.idle: since when, the evidence, when it goes.

    `releaseAt` is null when it will not be released for idleness (kept, or its pool releases none).
    """
    if condition is None:
        return None
    since = condition.get("since")
    after = None if keep or policy is None else policy.idle_release_after
    release_at = None
    if after is not None and since:
        release_at = _iso(datetime.fromisoformat(since) + after)
    return {
        "since": _iso(datetime.fromisoformat(since)) if since else None,
        "message": condition.get("message", ""),
        "keepWhenIdle": bool(keep),
        "releaseAt": release_at,
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
