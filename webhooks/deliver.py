"""Deliver webhook deliveries: signed, at least once, in order per reservation, with backoff.

Each subscription is served by one job at a time, in a sender thread of its own lane: SENDERS
threads for subscriptions whose deliveries go through, SLOW_SENDERS for those that are failing, so
a slow or failing receiver holds its own subscription's queue and never another's. A job sends
its subscription's claimed deliveries one after another (each the first pending one of its key,
so order holds) and starts no new attempt after JOB_BUDGET; an attempt lasts at most DEADLINE
(targets.py). Claims take `FOR UPDATE SKIP LOCKED` per subscription and a lease (`claimed_until`):
several workers deliver at once, and a worker killed mid-send leaves its claims to lapse, so the
delivery goes again (at least once; receivers de-duplicate on `webhook-id`). Answers come back to
the thread that claimed and are recorded there, on its one connection. Failures are tried again
after 5 s doubling to an hour, with jitter, until WEBHOOK_GIVE_UP after the event; a subscription
whose deliveries all failed for WEBHOOK_DISABLE_AFTER is disabled, its owner told on the page and,
where mail is configured, by mail.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import random
import select
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from capacity.port import LOST_DATABASE, survive
from config.outbound.targets import DEADLINE, Answer, Attempts

from .models import Delivery, Event, Subscription
from .outbox import add_timed_events, fan_out
from .sending import notify_disabled, record, retry_delay, send

CHANNEL = "berth_webhooks"
CLAIM_BATCH = 64  # deliveries claimed per subscription at a time (a backlog drains in fewer claims)
SENDERS = 8  # subscriptions served at once whose deliveries go through
SLOW_SENDERS = 2  # failing subscriptions served at once: they never take the others' senders
LEASE = timedelta(seconds=float(os.environ.get("BERTH_WEBHOOK_LEASE_SECONDS", "30")))
# A job starts no attempt after this: it holds its claim at most JOB_BUDGET + DEADLINE (20 s), within
# its lease, and a dribbling receiver's job gives its sender back after one attempt.
JOB_BUDGET = min(DEADLINE, LEASE.total_seconds() / 3)
RECORD_EVERY, RECORD_AFTER = 16, 0.05  # a job wakes the recorder after this many answers or seconds
IDLE_POLL = 1.0  # seconds between looks for due retries and timed events when nothing wakes it
BUSY_POLL = 0.02  # seconds between looks for answers in `deliver_due`, which has no NOTIFY to wait on
FANOUT_TURN = 100  # events fanned out between two looks for due deliveries
TIMED_EVERY = 30.0  # seconds between looks for bookings starting or ending within the lead

log = logging.getLogger(__name__)
__all__ = ["Dispatcher", "claim", "deliver_due", "fan_out", "retry_delay", "run_once", "serve"]

_DUE = """
  d.status = 'pending' AND d.next_attempt_at <= %(now)s
  AND (d.claimed_until IS NULL OR d.claimed_until < %(now)s)
  AND NOT EXISTS (SELECT 1 FROM webhooks_delivery e
                   WHERE e.subscription_id = d.subscription_id AND e.order_key = d.order_key
                     AND e.status = 'pending' AND e.event_id < d.event_id)
"""
_WAITING_SQL = f"""
SELECT s.id, s.failing_since IS NOT NULL FROM webhooks_subscription s
 WHERE s.enabled AND s.id <> ALL(%(busy)s::bigint[])
   AND EXISTS (SELECT 1 FROM webhooks_delivery d WHERE d.subscription_id = s.id AND {_DUE})
"""
_CLAIM_SQL = f"""
UPDATE webhooks_delivery SET claimed_until = %(until)s
 WHERE id IN (
   SELECT c.id FROM unnest(%(subscriptions)s::bigint[]) AS s(id)
   CROSS JOIN LATERAL (
     SELECT d.id FROM webhooks_delivery d
      WHERE d.subscription_id = s.id AND {_DUE}
      ORDER BY d.event_id
      LIMIT %(limit)s
      FOR UPDATE OF d SKIP LOCKED) c)
RETURNING id
"""


def waiting(now: datetime, busy: list[int]) -> list[tuple[int, bool]]:
    """Return (subscription, failing) for each enabled subscription, not in `busy`, with a delivery due."""
    with connection.cursor() as cur:
        cur.execute(_WAITING_SQL, {"now": now, "busy": busy})
        return cur.fetchall()


def claim(now: datetime, subscriptions: list[int], limit: int = CLAIM_BATCH) -> dict[int, list[Delivery]]:
    """Claim up to `limit` due deliveries of each subscription; return them by subscription, in order."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            _CLAIM_SQL, {"now": now, "until": now + LEASE, "limit": limit, "subscriptions": subscriptions}
        )
        ids = [row[0] for row in cur.fetchall()]
    claimed: dict[int, list[Delivery]] = {}
    for delivery in (
        Delivery.objects.filter(pk__in=ids).select_related("subscription", "event").order_by("event_id")
    ):
        claimed.setdefault(delivery.subscription_id, []).append(delivery)
    return claimed


class Dispatcher:
    """Serve subscriptions with due deliveries, one job per subscription at a time, in lanes.

    `step` records the answers that came back and starts a job for each waiting subscription a
    lane has a sender for, longest unserved first. Only the thread that made it touches the database.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()
        self.lanes = {
            False: ThreadPoolExecutor(SENDERS, thread_name_prefix="webhook-send"),
            True: ThreadPoolExecutor(SLOW_SENDERS, thread_name_prefix="webhook-slow"),
        }
        self.attempts = Attempts()
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        # A job's end wakes the loop at once, whether it waits on this alone or on a NOTIFY too.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.busy: dict[int, bool] = {}  # subscription -> its lane (failing or not)
        self.served: dict[int, float] = {}  # subscription -> when its last job started
        self.notices: set[Future] = set()
        self.delivered = self.failed = 0
        self._last_look = 0.0
        self._freed = True

    @property
    def idle(self) -> bool:
        """Whether no job and no notice is in flight."""
        self.notices = {n for n in self.notices if not n.done()}
        return not self.busy and not self.notices

    def step(self, now: datetime | None = None, look: bool = True) -> None:
        """Record the answers in; then, if `look`, a job ended or IDLE_POLL passed, start jobs."""
        self.collect(now)
        if look or self._freed or time.monotonic() - self._last_look >= IDLE_POLL:
            self._start(now)

    def wait(self, timeout: float, also: int | None = None) -> None:
        """Wait until a job ends or, given `also` (a connection's socket), it has something to read."""
        watched = [self._wake_r] if also is None else [self._wake_r, also]
        ready, _, _ = select.select(watched, [], [], timeout)
        if self._wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_r, 4096)

    def _start(self, now: datetime | None) -> None:
        self._freed, self._last_look = False, time.monotonic()
        free = {lane: (SLOW_SENDERS if lane else SENDERS) for lane in (False, True)}
        for lane in self.busy.values():
            free[lane] -= 1
        if not any(n > 0 for n in free.values()):
            return
        clock = now or timezone.now()
        chosen = []
        candidates = sorted(waiting(clock, list(self.busy)), key=lambda r: self.served.get(r[0], 0.0))
        for subscription, failing in candidates:
            if free[failing] > 0:
                free[failing] -= 1
                chosen.append((subscription, failing))
        if not chosen:
            return
        lanes = dict(chosen)
        for subscription, batch in claim(now or timezone.now(), list(lanes)).items():
            self.busy[subscription] = lanes[subscription]
            self.served[subscription] = time.monotonic()
            self.lanes[lanes[subscription]].submit(self._job, batch, now)

    def _job(self, batch: list[Delivery], now: datetime | None) -> None:
        """Send a subscription's batch one by one (a sender thread: no database here)."""
        started = woke = time.monotonic()
        waiting_answers = 0
        try:
            for index, delivery in enumerate(batch):
                if self.attempts.stopping or time.monotonic() - started >= JOB_BUDGET:
                    for rest in batch[index:]:
                        self.results.put(("unsent", rest, None, None))
                    break
                sent_at = now or timezone.now()
                try:
                    answer = send(delivery, sent_at, self.attempts)
                except Exception as exc:  # a bug here must not leave the rest of the batch claimed
                    log.exception("webhooks: sending delivery %s failed", delivery.pk)
                    answer = Answer(None, "", f"Berth could not send it ({type(exc).__name__})", 0)
                self.results.put(("answer", delivery, answer, sent_at))
                # Recorded soon, a few together: a worker that dies leaves few answers unrecorded
                # (sent again), and a fast receiver's answers cost one commit per RECORD_EVERY.
                waiting_answers += 1
                if waiting_answers >= RECORD_EVERY or time.monotonic() - woke >= RECORD_AFTER:
                    self._wake()
                    woke, waiting_answers = time.monotonic(), 0
        finally:
            self.results.put(("done", batch[0], None, None))
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full: a wake-up is already pending
            os.write(self._wake_w, b".")

    def collect(self, now: datetime | None = None) -> None:
        """Record every answer that came back; give back what was not sent; free finished subscriptions."""
        items = []
        while True:
            try:
                items.append(self.results.get_nowait())
            except queue.Empty:
                break
        if not items:
            return
        unsent = [d.pk for kind, d, answer, _ in items if kind == "unsent" or (answer and answer.cut)]
        answered = [(d, answer, at) for kind, d, answer, at in items if kind == "answer" and not answer.cut]
        # One commit, a few statements, for what came back together: a commit per delivery cost more
        # than its send.
        with transaction.atomic():
            disabled = record(answered, now or timezone.now(), self.rng) if answered else []
            if unsent:
                Delivery.objects.filter(pk__in=unsent).update(claimed_until=None)
        self.delivered += sum(answer.ok for _d, answer, _at in answered)
        self.failed += sum(not answer.ok for _d, answer, _at in answered)
        for kind, delivery, _answer, _at in items:
            if kind == "done":
                self.busy.pop(delivery.subscription_id, None)
                self._freed = True
        for subscription in disabled:
            self._notify(subscription)

    def _notify(self, subscription: Subscription) -> None:
        address = subscription.owner.email if settings.MAIL_CONFIGURED else ""
        if not address:
            return  # the page says it: a disabled subscription shows why in red

        def notice() -> None:
            try:
                notify_disabled(subscription, address)
            except Exception:  # a mail server down must not stop delivery; the page still says it
                log.exception("webhooks: could not mail that webhook %s is disabled", subscription.pk)

        self.notices.add(self.lanes[True].submit(notice))

    def close(self) -> None:
        """Cut the attempts in flight, wait for the senders, record what came back, give back the rest."""
        self.attempts.cut_all()
        for lane in self.lanes.values():
            lane.shutdown(wait=True)
        # Without the database their claims lapse instead: the deliveries go again (at least once).
        try:
            with contextlib.suppress(*LOST_DATABASE):
                self.collect()
        finally:
            os.close(self._wake_r)
            os.close(self._wake_w)


def deliver_due(now: datetime | None = None, rng: random.Random | None = None) -> tuple[int, int]:
    """Send every delivery due now and wait for every answer; return (delivered, failed attempts).

    `now` fixes the clock for the whole round (tests, `run_once` with a time); else it runs.
    """
    dispatcher = Dispatcher(rng)
    look = True
    try:
        while True:
            dispatcher.step(now, look=look)  # later looks: when a job ends, or every IDLE_POLL
            look = False
            if dispatcher.idle:
                return dispatcher.delivered, dispatcher.failed
            dispatcher.wait(BUSY_POLL)
    finally:
        dispatcher.close()


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
    dispatcher = Dispatcher()
    next_timed = last_fan_out = 0.0
    woken = True
    try:
        while not stop.is_set():
            now = timezone.now()
            if time.monotonic() >= next_timed:
                add_timed_events(now)
                prune(now)
                next_timed = time.monotonic() + TIMED_EVERY
            more = False
            if woken or time.monotonic() - last_fan_out >= IDLE_POLL:
                # One batch a turn: a backlog of events starts going out while the rest is fanned out.
                more = fan_out(timezone.now(), limit=FANOUT_TURN) > 0
                last_fan_out = time.monotonic()
            dispatcher.step(look=woken or more)
            woken = more
            if more:
                continue
            # Wait for a NOTIFY (a new event), a job's end, or IDLE_POLL (retries come due). A NOTIFY
            # read with an earlier answer waits in psycopg, not on the socket: look there first.
            for _ in raw.notifies(timeout=0, stop_after=1):
                woken = True
            if not woken:
                dispatcher.wait(IDLE_POLL, also=raw.fileno())
                for _ in raw.notifies(timeout=0, stop_after=1):
                    woken = True
    finally:
        dispatcher.close()
