"""What users do with webhooks: subscribe, list, remove, rotate the secret, send a test, read the log.

Everything here acts on the caller's own subscriptions: another user's is NOT_FOUND, as if it did
not exist. Tenants' members subscribe to reservation events (their tenants'); operators also to
node events.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from capacity.port import FORBIDDEN, INVALID_INPUT, NOT_FOUND, CapacityError, may_watch_nodes
from config.outbound.signing import new_secret
from config.outbound.targets import TargetError, check_url, printable, resolve
from trail.record import record

from .models import EVENT_TYPES, NODE_EVENTS, Attempt, Delivery, Event, Subscription
from .outbox import body_of

MAX_SUBSCRIPTIONS = 20  # per user
MAX_URL = 2000
MAX_DESCRIPTION = 200
LOG_SHOWN = 50  # deliveries the page and the API show, newest first
# Every event type, webhook.test too: a test goes to the subscription tested whether or not it lists it.
SUBSCRIBABLE = EVENT_TYPES


def subscribe(user, data: Any) -> Subscription:
    """Create a subscription from {"url", "events", "description"}; its secret is shown once."""
    if not isinstance(data, dict):
        raise CapacityError(INVALID_INPUT, 'the body must be {"url", "events", "description"}')
    unknown = sorted(set(data) - {"url", "events", "description"})
    if unknown:
        raise CapacityError(INVALID_INPUT, f"{unknown[0]}: unknown field (expected url, events, description)")
    url = data.get("url")
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise CapacityError(INVALID_INPUT, f"url: an http or https URL of at most {MAX_URL} characters")
    if url.startswith("mailto:"):
        _check_mail(user, url.removeprefix("mailto:"))
    else:
        try:
            _scheme, host, port, _path = check_url(url)
            resolve(host, port)
        except TargetError as exc:
            raise CapacityError(INVALID_INPUT, str(exc)) from None
    events = data.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise CapacityError(INVALID_INPUT, f"events: a list of one or more of {', '.join(SUBSCRIBABLE)}")
    for event in events:
        if event not in SUBSCRIBABLE:
            raise CapacityError(INVALID_INPUT, f"events: {event} is not one of {', '.join(SUBSCRIBABLE)}")
        if event in NODE_EVENTS and not may_watch_nodes(user):
            raise CapacityError(FORBIDDEN, f"events: {event} is for operators")
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise CapacityError(INVALID_INPUT, f"description: at most {MAX_DESCRIPTION} characters")
    with transaction.atomic():
        # Counted under the user's row lock: two creates at once cannot both pass the limit.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if Subscription.objects.filter(owner=user).count() >= MAX_SUBSCRIPTIONS:
            raise CapacityError(
                INVALID_INPUT, f"you have {MAX_SUBSCRIPTIONS} webhooks, the most one user may"
            )
        subscription = Subscription.objects.create(
            owner=user,
            url=url,
            events=list(dict.fromkeys(events)),
            description=description,
            secret=new_secret(),
        )
        record("webhook.create", f"webhook:{subscription.pk}", after=audited(subscription))
        return subscription


def _check_mail(user, address: str) -> None:
    """Allow events by mail only where mail is configured, and only to the user's own address."""
    if not settings.MAIL_CONFIGURED:
        raise CapacityError(
            INVALID_INPUT, "url: this Berth sends no mail (EMAIL_HOST is not set); use an http(s) URL"
        )
    if not user.email or address.lower() != user.email.lower():
        raise CapacityError(
            INVALID_INPUT, "url: events by mail go only to your own address (your account's email)"
        )


def own(user, subscription_id: Any) -> Subscription:
    """Return the caller's subscription, or raise NOT_FOUND (another user's too)."""
    try:
        pk = int(subscription_id)
    except (TypeError, ValueError):
        pk = None
    found = Subscription.objects.filter(pk=pk, owner=user).first() if pk is not None else None
    if found is None:
        raise CapacityError(NOT_FOUND, f"no webhook {subscription_id}")
    return found


def remove(user, subscription_id: Any) -> None:
    """Delete the caller's subscription and its pending deliveries."""
    with transaction.atomic():
        subscription = own(user, subscription_id)
        record("webhook.delete", f"webhook:{subscription.pk}", before=audited(subscription))
        subscription.delete()


def rotate_secret(user, subscription_id: Any) -> Subscription:
    """Give the subscription a new secret (shown once); deliveries from now on are signed with it."""
    subscription = own(user, subscription_id)
    subscription.secret = new_secret()
    with transaction.atomic():
        subscription.save(update_fields=["secret"])
        record("webhook.rotate-secret", f"webhook:{subscription.pk}")  # never the secret itself
    return subscription


def enable(user, subscription_id: Any) -> Subscription:
    """Turn a disabled subscription back on; its failure clock starts again."""
    subscription = own(user, subscription_id)
    before = {"enabled": subscription.enabled, "disabledReason": subscription.disabled_reason or None}
    subscription.enabled, subscription.disabled_reason, subscription.failing_since = True, "", None
    with transaction.atomic():
        subscription.save(update_fields=["enabled", "disabled_reason", "failing_since"])
        record("webhook.enable", f"webhook:{subscription.pk}", before=before, after={"enabled": True})
    return subscription


def send_test(user, subscription_id: Any) -> Delivery:
    """Queue a `webhook.test` event to this subscription alone; the worker sends it at once."""
    subscription = own(user, subscription_id)
    now = timezone.now()
    with transaction.atomic():
        event = Event.objects.create(type="webhook.test", at=now, reason="sent from Berth", fanned_out=True)
        delivery = Delivery.objects.create(
            event=event,
            subscription=subscription,
            order_key=f"test:{event.pk}",
            body=body_of(event, {"webhook": subscription.pk, "description": subscription.description}),
            next_attempt_at=now,
            created_at=now,
        )
        with connection.cursor() as cur:
            cur.execute("SELECT pg_notify('berth_webhooks', '')")
    return delivery


def deliveries_of(subscription: Subscription) -> QuerySet:
    """Return the subscription's deliveries (order and bound them)."""
    return Delivery.objects.filter(subscription=subscription).select_related("event")


def recent_deliveries(subscription: Subscription, limit: int = LOG_SHOWN) -> list[dict]:
    """Return the subscription's latest deliveries, newest first, each with its attempts."""
    return describe_deliveries(list(deliveries_of(subscription).order_by("-id")[:limit]))


def describe_deliveries(deliveries: list[Delivery]) -> list[dict]:
    """Return `deliveries` as the API and the page show them, each with its attempts."""
    tries: dict[int, list[Attempt]] = {}
    for attempt in Attempt.objects.filter(delivery__in=deliveries).order_by("id"):
        tries.setdefault(attempt.delivery_id, []).append(attempt)
    return [
        {
            "id": d.pk,
            "eventId": f"evt_{d.event_id}",
            "type": d.event.type,
            "status": d.status,
            "attempts": d.attempts,
            "createdAt": d.created_at,
            "nextAttemptAt": d.next_attempt_at if d.status == Delivery.Status.PENDING else None,
            "deliveredAt": d.delivered_at,
            "lastStatusCode": d.last_status_code,
            "lastError": printable(d.last_error, 1000),
            "tries": [
                {
                    "at": a.at,
                    "statusCode": a.status_code,
                    "durationMs": a.duration_ms,
                    # The receiver's words, to the subscription's owner alone: 200 printable characters.
                    "answer": printable(a.answer),
                    "error": printable(a.error, 1000),
                }
                for a in tries.get(d.pk, [])
            ],
        }
        for d in deliveries
    ]


def audited(subscription: Subscription) -> dict:
    """Return what the audit keeps of a subscription: its owner, where it sends (no path or query,
    which may hold the receiver's own secret), its events and description."""
    url = subscription.url
    target = url if url.startswith("mailto:") else "/".join(url.split("/", 3)[:3])
    return {
        "owner": subscription.owner.get_username(),
        "target": target,
        "events": subscription.events,
        "description": subscription.description,
    }


def describe(subscription: Subscription, *, with_secret: bool = False) -> dict:
    """Return a subscription as the API shows it (its secret only when just made or rotated)."""
    shown = {
        "id": subscription.pk,
        "url": subscription.url,
        "events": subscription.events,
        "description": subscription.description,
        "enabled": subscription.enabled,
        "disabledReason": subscription.disabled_reason or None,
        "failingSince": subscription.failing_since,
        "createdAt": subscription.created_at,
    }
    if with_secret:
        shown["secret"] = subscription.secret
    return shown
