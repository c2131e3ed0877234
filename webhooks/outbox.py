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

from capacity.port import (
    CapacityError,
    Reservation,
    may_watch_nodes,
    node_detail,
    render_reservations,
    scope_for,
)
from inventory.models import Node, Tenant

from .models import NODE_EVENTS, Delivery, Event, Subscription

FANOUT_BATCH = 500
FANOUT_LOCK = 0x77EB_400C  # one fan-out at a time, so each key's deliveries follow event order

_TIMED_SQL = """
INSERT INTO webhooks_event (type, at, reservation_id, tenant_id, reason, fanned_out)
SELECT %(type)s, %(now)s, r.id, r.tenant_id, '', false
  FROM capacity_reservation r
 WHERE r.status = 'placed' AND r.{column} > %(now)s AND r.{column} <= %(until)s
   AND NOT r.conditions @> '[{{"type": "AwaitingApproval"}}]'::jsonb
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


def fan_out(now: datetime, limit: int = FANOUT_BATCH) -> int:
    """Turn up to `limit` unfanned events into deliveries; return how many deliveries."""
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [FANOUT_LOCK])
        events = list(Event.objects.filter(fanned_out=False).order_by("id")[:limit])
        if not events:
            return 0
        subscriptions = list(Subscription.objects.filter(enabled=True).select_related("owner"))
        data = _Data(events, subscriptions)
        deliveries = []
        for event in events:
            for subscription in subscriptions:
                if event.type not in subscription.events:
                    continue
                shown = data.of(event, subscription)
                if shown is None:
                    continue  # not the owner's to see
                deliveries.append(
                    Delivery(
                        event=event,
                        subscription=subscription,
                        order_key=f"reservation:{event.reservation_id}"
                        if event.reservation_id
                        else f"node:{event.node_id}",
                        body=body_of(event, shown),
                        next_attempt_at=now,
                        created_at=now,
                    )
                )
        Delivery.objects.bulk_create(deliveries, ignore_conflicts=True)
        Event.objects.filter(pk__in=[e.pk for e in events]).update(fanned_out=True)
    return len(deliveries)


class _Data:
    """What each owner may see of a batch's objects: rendered once per scope, not per subscription.

    A reservation renders once for every owner who sees every tenant, once for each set of tenants;
    a node once. Ten subscriptions of one owner cost one rendering, not ten.
    """

    def __init__(self, events: list[Event], subscriptions: list[Subscription]) -> None:
        self.reservations = Reservation.objects.in_bulk(
            {e.reservation_id for e in events if e.reservation_id}
        )
        self.nodes = Node.objects.in_bulk({e.node_id for e in events if e.node_id})
        self.tenants = dict(Tenant.objects.values_list("pk", "slug"))
        self.scopes = {s.pk: scope_for(s.owner) for s in subscriptions}
        self.node_watchers = {s.pk: may_watch_nodes(s.owner) for s in subscriptions}
        self.rendered: dict[tuple, dict] = {}
        self.node_details: dict[int, dict | None] = {}

    def of(self, event: Event, subscription: Subscription) -> dict | None:
        """Return what the subscription's owner may see of the event's object, or None."""
        if event.type in NODE_EVENTS:
            if event.node_id not in self.nodes or not self.node_watchers[subscription.pk]:
                return None
            return self._node(event.node_id)
        reservation = self.reservations.get(event.reservation_id)
        if reservation is None:
            return None
        scope = self.scopes[subscription.pk]
        if not scope.allows(self.tenants.get(reservation.tenant_id, "")):
            return None
        if (scope, reservation.pk) not in self.rendered:
            self._render(scope)
        return self.rendered[(scope, reservation.pk)]

    def _render(self, scope) -> None:
        """Render every reservation of the batch this scope may see, in one go."""
        seen = [r for r in self.reservations.values() if scope.allows(self.tenants.get(r.tenant_id, ""))]
        for reservation, data in zip(seen, render_reservations(seen, scope), strict=True):
            self.rendered[(scope, reservation.pk)] = dict(data)

    def _node(self, node_id: int) -> dict | None:
        if node_id not in self.node_details:
            try:
                self.node_details[node_id] = node_detail(self.nodes[node_id].name)
            except CapacityError:
                self.node_details[node_id] = None
        return self.node_details[node_id]


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
