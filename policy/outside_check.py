"""The outside check (docs/policy.md, Outside check): a pool's policyWebhook says yes or no to a create.

A pool rule at BEFORE_CREATE (capacity.rules): called once per create, after the input is validated
and before any lock is taken or any row written (no transaction is open while it runs), with the
request as JSON, signed as Berth signs its webhooks (Standard Webhooks, the pool's own secret). It has DEADLINE seconds for everything: 2xx
allows; 403 refuses with the answer's `message` as POLICY_LIMIT; anything else, or no answer,
follows policyWebhookOnError. Its answer is bounded: ANSWER_READ bytes read, a message of at most
MAX_MESSAGE printable characters, and only a string `message` counts.

A create waiting on the check holds a web thread, so it takes a slot of the process's held-thread
budget (capacity.waits.SLOTS, shared with waits): a tenant runs at most CHECKS_PER_TENANT checks at
once in a web process, waits and checks together at most half its threads. Past either the create
answers at once 429 THROTTLED with Retry-After BUSY_RETRY_AFTER, before anything is written.

The check's settings, the URL and secret an operator sets, are checked here too (check_webhook_url,
check_secret) for the pool policy's form and serializer (policy.pool_policy), which write them.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import uuid
from datetime import datetime
from typing import Any

from capacity.port import (
    CHECKS_PER_TENANT,
    INVALID_INPUT,
    POLICY_LIMIT,
    SLOTS,
    TENANT_BOUND,
    CapacityError,
    Limits,
    PoolRow,
    Reservation,
    Rule,
    to_datetime,
)
from config.errors import THROTTLED
from config.outbound.signing import PREFIX, headers, new_secret
from config.outbound.targets import Answer, TargetError, check_url, post, printable, resolve

from .check_cap import busy, pool_slot
from .models import OnError

# Seconds for the lookup, connect, request and answer together: a URL's check, the check's call.
DEADLINE = 2.0
MAX_URL = 2000
SECRET_BYTES = (24, 64)  # a settable secret's length, decoded
MAX_MESSAGE = 300  # printable characters of a refusal's message shown to the caller
REFUSED = "the pool's outside check (policyWebhook) refused this booking"
# A create refused a slot may retry after this (seconds): a running check ends by its deadline.
BUSY_RETRY_AFTER = math.ceil(DEADLINE)

log = logging.getLogger(__name__)

__all__ = [
    "BUSY_RETRY_AFTER",
    "DEADLINE",
    "OUTSIDE_CHECK",
    "RULES",
    "check_secret",
    "check_webhook_url",
    "consult",
    "new_secret",
]


def consult(prepared: Any, identity: str = "") -> Answer | None:
    """Ask the pool's outside check about a create (a services.prepare.Prepared); POLICY_LIMIT if it refuses.

    Returns its answer (None when the pool has no check, or the create replays an idempotency
    key: that answer was given). Never called inside a transaction: it must hold no lock. THROTTLED,
    at once, when the tenant or the process holds all the slots it may (capacity.waits.SLOTS).
    """
    limits = prepared.pool.limits
    if limits is None or not limits.policy_webhook:
        return None
    key = prepared.extra.get("idempotency_key")
    if key is not None and Reservation.objects.filter(tenant=prepared.tenant, idempotency_key=key).exists():
        return None
    body = json.dumps(_body(prepared, identity), separators=(",", ":")).encode()
    signed = headers(
        limits.policy_webhook_secret, f"chk_{uuid.uuid4().hex}", int(prepared.now.timestamp()), body
    )
    cap = limits.policy_webhook_concurrency
    with SLOTS.checking(prepared.tenant.pk) as refused, pool_slot(prepared.pool.pk, cap) as free:
        if refused is not None:
            raise CapacityError(THROTTLED, _busy(refused, prepared), retry_after=BUSY_RETRY_AFTER)
        if not free:
            pool = prepared.request.pool_id
            raise CapacityError(THROTTLED, busy(pool, cap, BUSY_RETRY_AFTER), retry_after=BUSY_RETRY_AFTER)
        answer = post(
            limits.policy_webhook,
            body,
            {**signed, "User-Agent": "Berth-PolicyCheck/1"},
            deadline=DEADLINE,
            whole=True,
        )
    judge(answer, limits)
    return answer


def _busy(refused: str, prepared: Any) -> str:
    """Say why a create may not ask its pool's check now, and when to ask again."""
    retry = f"nothing was booked: retry in {BUSY_RETRY_AFTER} s"
    if refused == TENANT_BOUND:
        return (
            f"{prepared.tenant.slug} already has {CHECKS_PER_TENANT} bookings waiting on "
            f"{prepared.request.pool_id}'s outside check (policyWebhook); {retry}"
        )
    return f"this server is answering as many outside checks and waits as it may at once; {retry}"


def _body(prepared: Any, identity: str) -> dict:
    """Return what the check receives: the request as the caller sent it, who asks, the window."""
    request = prepared.request
    return {
        "type": "reservation.create",
        "timestamp": _iso(prepared.now),
        "data": {
            "tenantId": prepared.tenant.slug,
            "poolId": request.pool_id,
            "identity": identity,
            "start": _iso_ms(request.during.start),
            "end": _iso_ms(request.during.end),
            "request": prepared.extra["input"],
        },
    }


def judge(answer: Answer, limits: Limits) -> None:
    """Allow a 2xx; refuse a 403 with its message; else follow policyWebhookOnError."""
    if answer.ok:
        return
    if answer.status == 403:
        raise CapacityError(POLICY_LIMIT, _message(answer) or REFUSED)
    said = f"answered {answer.status}" if answer.status is not None else answer.error or "no answer"
    log.warning("policyWebhook %s: %s", limits.policy_webhook, said)
    if limits.policy_webhook_on_error == OnError.ALLOW:
        return
    raise CapacityError(
        POLICY_LIMIT,
        f"the pool's outside check (policyWebhook) {printable(said, 120)}; policyWebhookOnError is deny",
    )


def _message(answer: Answer) -> str:
    """Return a 403's `message` (a JSON object's string), printable and bounded, or ""."""
    if answer.longer:
        return ""
    try:
        data = json.loads(answer.text)
    except ValueError:
        return ""
    message = data.get("message") if isinstance(data, dict) else None
    return printable(message, MAX_MESSAGE) if isinstance(message, str) else ""


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _iso_ms(ms: int) -> str:
    return _iso(to_datetime(ms))


def _asks(pool: PoolRow) -> bool:
    return pool.limits is not None and bool(pool.limits.policy_webhook)


def _asked_on(pool: PoolRow) -> tuple:
    """Return the settings the check's answer depends on: a pool read again asks again if they moved."""
    limits = pool.limits
    return (limits.policy_webhook, limits.policy_webhook_secret, limits.policy_webhook_on_error)


OUTSIDE_CHECK = Rule("outside-check", applies=_asks, before_create=consult, asked=_asked_on)
RULES = (OUTSIDE_CHECK,)


def check_webhook_url(value: object, name: str = "policyWebhook") -> str:
    """Return an outside check's URL, checked as webhook subscriptions are; INVALID_INPUT naming `name`."""
    if not isinstance(value, str) or not value or len(value) > MAX_URL:
        raise CapacityError(INVALID_INPUT, f"{name}: an http or https URL of at most {MAX_URL} characters")
    try:
        _scheme, host, port, _path = check_url(value)
        resolve(host, port, timeout=DEADLINE)
    except TargetError as exc:
        raise CapacityError(INVALID_INPUT, f"{name}: {str(exc).removeprefix('url: ')}") from None
    return value


def check_secret(value: object) -> str:
    """Return a secret an operator sets (whsec_ and base64 of 24 to 64 bytes), or INVALID_INPUT."""
    bad = f"policyWebhookSecret must be {PREFIX} followed by base64 of {SECRET_BYTES[0]} to {SECRET_BYTES[1]} bytes"
    if not isinstance(value, str) or not value.startswith(PREFIX) or len(value) > 100:
        raise CapacityError(INVALID_INPUT, bad)
    try:
        raw = base64.b64decode(value.removeprefix(PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise CapacityError(INVALID_INPUT, bad) from None
    if not SECRET_BYTES[0] <= len(raw) <= SECRET_BYTES[1]:
        raise CapacityError(INVALID_INPUT, bad)
    return value
