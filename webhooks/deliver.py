"""Deliver webhook deliveries: signed, at least once, in order per reservation, with backoff.

Several workers may deliver at once: each claims due deliveries with `FOR UPDATE SKIP LOCKED`
and a lease (`claimed_until`), sends outside any transaction, then records the answer. A worker
killed mid-send leaves its claim to expire: the delivery goes again (at least once; receivers
de-duplicate on `webhook-id`). A delivery waits while an earlier one of its key (its reservation
or node, for the same subscription) is still pending. Failures are tried again after 5 s doubling
to an hour, with jitter, until WEBHOOK_GIVE_UP after the event; a subscription whose deliveries
all failed for WEBHOOK_DISABLE_AFTER is disabled, its owner told why on the page.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.utils import timezone

from capacity.worker_jobs import survive

from .models import Attempt, Delivery, Event, Subscription
from .outbox import add_timed_events, fan_out
from .signing import headers
from .targets import ANSWER_KEPT, Answer, post

CHANNEL = "berth_webhooks"
CLAIM_BATCH = 16
SENDERS = 8  # deliveries sent at once: a slow receiver holds one sender for up to 5 s
# A claim's sends take at most CLAIM_BATCH / SENDERS timeouts (10 s): a live worker's claim never
# lapses, and a dead worker's claims go to another worker this long after it died.
LEASE = timedelta(seconds=float(os.environ.get("BERTH_WEBHOOK_LEASE_SECONDS", "30")))
FIRST_RETRY, LAST_RETRY = 5.0, 3600.0  # seconds
IDLE_POLL = 1.0  # seconds between looks for due retries and timed events when nothing wakes it
TIMED_EVERY = 30.0  # seconds between looks for bookings starting or ending within the lead

log = logging.getLogger(__name__)

_CLAIM_SQL = """
UPDATE webhooks_delivery SET claimed_until = %(until)s
 WHERE id IN (
   SELECT d.id FROM webhooks_delivery d JOIN webhooks_subscription s ON s.id = d.subscription_id
    WHERE d.status = 'pending' AND s.enabled AND d.next_attempt_at <= %(now)s
      AND (d.claimed_until IS NULL OR d.claimed_until < %(now)s)
      AND NOT EXISTS (SELECT 1 FROM webhooks_delivery e
                       WHERE e.subscription_id = d.subscription_id AND e.order_key = d.order_key
                         AND e.status = 'pending' AND e.event_id < d.event_id)
    ORDER BY d.event_id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED)
RETURNING id
"""


def claim(now: datetime, limit: int = CLAIM_BATCH) -> list[Delivery]:
    """Claim up to `limit` due deliveries for this worker; return them with their subscriptions."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(_CLAIM_SQL, {"now": now, "until": now + LEASE, "limit": limit})
        ids = [row[0] for row in cur.fetchall()]
    return list(
        Delivery.objects.filter(pk__in=ids).select_related("subscription", "event").order_by("event_id")
    )


def send(delivery: Delivery, now: datetime) -> Answer:
    """Send one delivery, signed with its subscription's secret as of now (or mail it, for mailto:)."""
    if delivery.subscription.url.startswith("mailto:"):
        return mail(delivery)
    body = delivery.body.encode()
    signed = headers(delivery.subscription.secret, f"evt_{delivery.event_id}", int(now.timestamp()), body)
    return post(delivery.subscription.url, body, {**signed, "User-Agent": "Berth-Webhooks/1"})


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
        return Answer(None, "", f"mail: {type(exc).__name__}: {exc}"[:ANSWER_KEPT], _ms(started))
    return Answer(202, "accepted by the mail server", "", _ms(started))


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def retry_delay(attempts: int, rng: random.Random) -> float:
    """Return seconds until the next try after `attempts` failed ones: doubling, capped, jittered."""
    return min(FIRST_RETRY * 2 ** (attempts - 1), LAST_RETRY) * rng.uniform(0.5, 1.0)


def record(delivery: Delivery, answer: Answer, now: datetime, rng: random.Random) -> None:
    """Write the attempt and what follows from it, for the delivery and its subscription."""
    with transaction.atomic():
        Attempt.objects.create(
            delivery=delivery,
            at=now,
            duration_ms=answer.duration_ms,
            status_code=answer.status,
            answer=answer.text[:ANSWER_KEPT],
            error=answer.error,
        )
        attempts = delivery.attempts + 1
        fields = {"attempts": attempts, "claimed_until": None, "last_status_code": answer.status}
        subscription = Subscription.objects.select_for_update().get(pk=delivery.subscription_id)
        if answer.ok:
            fields.update(status=Delivery.Status.DELIVERED, delivered_at=now, last_error="")
            if subscription.failing_since is not None:
                subscription.failing_since = None
                subscription.save(update_fields=["failing_since"])
        else:
            said = answer.error or f"answered {answer.status}"
            fields["last_error"] = said
            if now - delivery.created_at >= timedelta(hours=settings.WEBHOOK_GIVE_UP_HOURS):
                fields["status"] = Delivery.Status.FAILED
            else:
                fields["next_attempt_at"] = now + timedelta(seconds=retry_delay(attempts, rng))
            since = subscription.failing_since or now
            if subscription.failing_since is None:
                subscription.failing_since = now
                subscription.save(update_fields=["failing_since"])
            if subscription.enabled and now - since >= timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS):
                subscription.enabled = False
                subscription.disabled_reason = (
                    f"Disabled {now:%Y-%m-%d %H:%M} UTC: every delivery failed since "
                    f"{since:%Y-%m-%d %H:%M} UTC; the last: {said}"
                )
                subscription.save(update_fields=["enabled", "disabled_reason"])
        Delivery.objects.filter(pk=delivery.pk).update(**fields)


def deliver_due(now: datetime | None = None, rng: random.Random | None = None) -> tuple[int, int]:
    """Send every delivery due now, claim by claim; return (delivered, failed attempts).

    A claim's deliveries go out SENDERS at a time (each is the first pending one of its key, so
    order holds); their answers are recorded on this thread's connection. `now` fixes the clock
    for the whole round (tests, `run_once` with a time); else it runs.
    """
    rng = rng or random.Random()

    def clock() -> datetime:
        return now or timezone.now()

    delivered = failed = 0
    seen: set[int] = set()
    with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook-send") as senders:
        while True:
            batch = [d for d in claim(clock()) if d.pk not in seen]
            if not batch:
                return delivered, failed
            seen.update(d.pk for d in batch)  # with a fixed clock, a failed one is due only later
            sent_at = clock()
            answers = list(senders.map(send, batch, [sent_at] * len(batch)))
            # One commit for the claim's answers: a commit per delivery cost more than its send.
            with transaction.atomic():
                for delivery, answer in zip(batch, answers, strict=True):
                    record(delivery, answer, clock(), rng)
                    delivered += answer.ok
                    failed += not answer.ok


def now_or(now: datetime | None) -> datetime:
    return now or timezone.now()


def prune(now: datetime) -> int:
    """Forget delivered and failed deliveries (and their attempts) older than WEBHOOK_LOG_DAYS."""
    cutoff = now - timedelta(days=settings.WEBHOOK_LOG_DAYS)
    gone, _ = Delivery.objects.filter(created_at__lt=cutoff).exclude(status=Delivery.Status.PENDING).delete()
    Event.objects.filter(fanned_out=True, at__lt=cutoff, deliveries__isnull=True).delete()
    return gone


def run_once(now: datetime | None = None) -> str:
    """One round: timed events, fan-out, then every due delivery; say what it did ("" for nothing)."""
    now = now_or(now)
    prune(now)
    timed = add_timed_events(now)
    fanned = fan_out(now)
    delivered, failed = deliver_due(now)
    if not (timed or fanned or delivered or failed):
        return ""
    return (
        f"{timed} timed events, {fanned} deliveries queued, {delivered} delivered, {failed} failed attempts"
    )


def serve(stop: threading.Event) -> None:
    """Deliver until `stop`: woken by the outbox trigger's NOTIFY, else every IDLE_POLL seconds."""
    # psycopg's own errors count too: the NOTIFY wait talks to the raw connection, outside Django's wrapping.
    survive("webhooks", stop, _serve, log)


def _serve(stop: threading.Event) -> None:
    connection.ensure_connection()
    with connection.cursor() as cur:
        cur.execute(f"LISTEN {CHANNEL}")
    raw = connection.connection
    next_timed = 0.0
    while not stop.is_set():
        now = timezone.now()
        if time.monotonic() >= next_timed:
            add_timed_events(now)
            prune(now)
            next_timed = time.monotonic() + TIMED_EVERY
        while fan_out(timezone.now()):
            pass
        deliver_due()
        # Wait for a NOTIFY (a new event) or IDLE_POLL (retries come due), whichever is first.
        for _ in raw.notifies(timeout=IDLE_POLL, stop_after=1):
            pass
