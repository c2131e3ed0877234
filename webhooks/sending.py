"""One delivery's attempt and its record: send (or mail) it signed, then write what followed."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F

from config.outbound.signing import headers
from config.outbound.targets import Answer, Attempts, post, printable
from trail.record import record as audit_record

from .models import Attempt, Delivery, Subscription

FIRST_RETRY, LAST_RETRY = 5.0, 3600.0  # seconds


def send(delivery: Delivery, now: datetime, attempts: Attempts | None = None) -> Answer:
    """Send one delivery, signed with its subscription's secret as of now (or mail it, for mailto:)."""
    if delivery.subscription.url.startswith("mailto:"):
        return mail(delivery)
    body = delivery.body.encode()
    signed = headers(delivery.subscription.secret, f"evt_{delivery.event_id}", int(now.timestamp()), body)
    return post(
        delivery.subscription.url, body, {**signed, "User-Agent": "Berth-Webhooks/1"}, attempts=attempts
    )


def mail(delivery: Delivery) -> Answer:
    """Mail the event to the subscription's owner (mailto: subscriptions; only with mail configured)."""
    started = time.monotonic()
    event = json.loads(delivery.body)
    data = event.get("data") or {}
    what = f"reservation {data['id']}" if "id" in data else data.get("name", "")
    subject = f"Berth: {event['type']} {what}".strip()
    text = f"{event['type']} at {event['timestamp']}\n{event.get('reason') or ''}\n\n" + json.dumps(
        data, indent=2
    )
    try:
        send_mail(
            subject, text, settings.DEFAULT_FROM_EMAIL, [delivery.subscription.url.removeprefix("mailto:")]
        )
    except Exception as exc:  # a refused or unreachable mail server is a failed attempt, retried
        return Answer(None, "", printable(f"mail: {type(exc).__name__}: {exc}"), _ms(started))
    return Answer(202, "accepted by the mail server", "", _ms(started))


def notify_disabled(subscription: Subscription, address: str) -> None:
    """Mail a subscription's owner that it was disabled, why, and how to turn it back on."""
    send_mail(
        f"Berth: your webhook {subscription.pk} is disabled",
        f"Your webhook {subscription.pk} to {subscription.url} is disabled.\n\n"
        f'{subscription.disabled_reason}\n\nTurn it back on with "Enable again" on the Webhooks page '
        f"(/webhooks/) or POST /api/v1/webhooks/{subscription.pk}/enable once the receiver answers.",
        settings.DEFAULT_FROM_EMAIL,
        [address],
    )


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def retry_delay(attempts: int, rng: random.Random) -> float:
    """Return seconds until the next try after `attempts` failed ones: doubling, capped, jittered."""
    return min(FIRST_RETRY * 2 ** (attempts - 1), LAST_RETRY) * rng.uniform(0.5, 1.0)


def record(answers: list[tuple[Delivery, Answer, datetime]], now: datetime, rng: random.Random) -> list:
    """Write attempts and what follows from them, in a few statements; return the subscriptions disabled.

    `answers` holds (delivery, answer, when it was sent) in the order they were sent.
    """
    by_subscription: dict[int, list] = {}
    for item in answers:
        by_subscription.setdefault(item[0].subscription_id, []).append(item)
    disabled, tries, delivered = [], [], {}
    with transaction.atomic():
        # Locked in id order: workers recording for the same subscriptions never deadlock.
        alive = list(Subscription.objects.select_for_update().filter(pk__in=by_subscription).order_by("pk"))
        # A subscription removed while its deliveries were in flight took them along: nothing to write.
        for subscription in alive:
            changed: set[str] = set()
            for delivery, answer, sent_at in by_subscription[subscription.pk]:
                tries.append(
                    Attempt(
                        delivery=delivery,
                        at=sent_at,
                        duration_ms=answer.duration_ms,
                        status_code=answer.status,
                        answer=answer.text,
                        error=answer.error,
                    )
                )
                if answer.ok:
                    delivered.setdefault(answer.status, []).append(delivery.pk)
                    if subscription.failing_since is not None:
                        subscription.failing_since = None
                        changed.add("failing_since")
                    continue
                if _failed(subscription, delivery, answer, now, rng, changed):
                    disabled.append(subscription)
            if changed:
                subscription.save(update_fields=sorted(changed))
        Attempt.objects.bulk_create(tries)
        for status, ids in delivered.items():
            Delivery.objects.filter(pk__in=ids).update(
                status=Delivery.Status.DELIVERED,
                delivered_at=now,
                last_error="",
                last_status_code=status,
                claimed_until=None,
                attempts=F("attempts") + 1,
            )
    return disabled


def _failed(subscription, delivery, answer, now, rng, changed: set[str]) -> bool:
    """Write a failed attempt's delivery; mark its subscription failing; return whether it is now disabled."""
    said = answer.error or f"answered {answer.status}"
    attempts = delivery.attempts + 1
    fields = {
        "attempts": attempts,
        "claimed_until": None,
        "last_status_code": answer.status,
        "last_error": said,
    }
    if now - delivery.created_at >= timedelta(hours=settings.WEBHOOK_GIVE_UP_HOURS):
        fields["status"] = Delivery.Status.FAILED
    else:
        fields["next_attempt_at"] = now + timedelta(seconds=retry_delay(attempts, rng))
    Delivery.objects.filter(pk=delivery.pk).update(**fields)
    since = subscription.failing_since or now
    if subscription.failing_since is None:
        subscription.failing_since = now
        changed.add("failing_since")
    if subscription.enabled and now - since >= timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS):
        subscription.enabled = False
        subscription.disabled_reason = (
            f"Disabled {now:%Y-%m-%d %H:%M} UTC: every delivery failed since "
            f"{since:%Y-%m-%d %H:%M} UTC; the last: {said}"
        )
        changed.update(("enabled", "disabled_reason"))
        # In the delivery round's transaction, with the subscription's save.
        audit_record(
            "webhook.disable",
            f"webhook:{subscription.pk}",
            before={"enabled": True},
            after={"enabled": False},
            reason=subscription.disabled_reason,
        )
        return True
    return False
