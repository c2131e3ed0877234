"""From outbox events to deliveries: who wants each event, and the body each receives.

Triggers write the events (migrations/0002); this module adds the timed ones (a booking starting
or ending within WEBHOOK_LEAD) and fans every event out to the enabled subscriptions that asked
for its type and may see it: a tenant's member its tenants' reservations, an operator everything,
node events included. The body is the object as the API shows it to the subscription's owner at
fan-out (about a second after the change), with the event's type, time and reason.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction

from capacity.access import is_operator, scope_for
from capacity.api.nodes import node_detail
from capacity.api.views import render_reservation
from capacity.models import Reservation
from capacity.placement import CapacityError
from inventory.models import Node, Tenant

from .models import NODE_EVENTS, Delivery, Event, Subscription

FANOUT_BATCH = 500
FANOUT_LOCK = 0x77EB_400C  # one fan-out at a time, so each key's deliveries follow event order

_TIMED_SQL = """
INSERT INTO webhooks_event (type, at, reservation_id, tenant_id, reason, fanned_out)
SELECT %(type)s, %(now)s, r.id, r.tenant_id, '', false
  FROM capacity_reservation r
 WHERE r.status = 'placed' AND r.{column} > %(now)s AND r.{column} <= %(until)s
   AND NOT EXISTS (SELECT 1 FROM webhooks_event e WHERE e.reservation_id = r.id AND e.type = %(type)s)
"""


def add_timed_events(now: datetime) -> int:
    """Write `reservation.starting` and `.ending` for bookings that start or end within the lead."""
    wanted = set()
    for events in Subscription.objects.filter(enabled=True).values_list("events", flat=True):
        wanted.update(events)
    lead = timedelta(minutes=settings.WEBHOOK_LEAD_MINUTES)
    added = 0
    with connection.cursor() as cur:
        for kind, column in (("reservation.starting", "starts_at"), ("reservation.ending", "ends_at")):
            if kind in wanted:
                cur.execute(_TIMED_SQL.format(column=column), {"type": kind, "now": now, "until": now + lead})
                added += cur.rowcount
    return added


def fan_out(now: datetime) -> int:
    """Turn up to FANOUT_BATCH unfanned events into deliveries; return how many deliveries."""
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [FANOUT_LOCK])
        events = list(Event.objects.filter(fanned_out=False).order_by("id")[:FANOUT_BATCH])
        if not events:
            return 0
        subscriptions = list(Subscription.objects.filter(enabled=True).select_related("owner"))
        reservations = Reservation.objects.in_bulk({e.reservation_id for e in events if e.reservation_id})
        nodes = Node.objects.in_bulk({e.node_id for e in events if e.node_id})
        tenants = dict(Tenant.objects.values_list("pk", "slug"))
        deliveries = []
        for event in events:
            for subscription in subscriptions:
                if event.type not in subscription.events:
                    continue
                data = _data(event, subscription.owner, reservations, nodes, tenants)
                if data is None:
                    continue  # not the owner's to see
                deliveries.append(
                    Delivery(
                        event=event,
                        subscription=subscription,
                        order_key=f"reservation:{event.reservation_id}"
                        if event.reservation_id
                        else f"node:{event.node_id}",
                        body=body_of(event, data),
                        next_attempt_at=now,
                        created_at=now,
                    )
                )
        Delivery.objects.bulk_create(deliveries, ignore_conflicts=True)
        Event.objects.filter(pk__in=[e.pk for e in events]).update(fanned_out=True)
    return len(deliveries)


def _data(event, owner, reservations, nodes, tenants) -> dict | None:
    """Return what the owner may see of the event's object, or None when it is not theirs."""
    if event.type in NODE_EVENTS:
        node = nodes.get(event.node_id)
        if node is None or not is_operator(owner):
            return None
        try:
            return node_detail(node.name)
        except CapacityError:
            return None
    reservation = reservations.get(event.reservation_id)
    if reservation is None:
        return None
    scope = scope_for(owner)
    if scope.tenants is not None and tenants.get(reservation.tenant_id) not in scope.tenants:
        return None
    return dict(render_reservation(reservation, scope))


def body_of(event: Event, data: dict) -> str:
    """Return the JSON a subscription receives for an event."""
    return json.dumps(
        {
            "id": message_id(event),
            "type": event.type,
            "timestamp": event.at,
            "reason": event.reason,
            "data": data,
        },
        cls=DjangoJSONEncoder,
        separators=(",", ":"),
    )


def message_id(event: Event) -> str:
    """Return the event's id as receivers see it: the same on every retry, for de-duplication."""
    return f"evt_{event.pk}"
