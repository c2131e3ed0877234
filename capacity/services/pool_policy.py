"""A pool's policy (docs/policy.md): read it, change the fields a PUT names, and check a booking against it.

A pool without a row reads the defaults, which are the site's settings (IDLE_AFTER,
IDLE_RELEASE_AFTER): exactly what the idle check did before pools had policies. The first write
creates the row from those defaults, then applies what it names. Durations are written as the
API writes them elsewhere ("2h"; services.inputs.parse_duration); null is off. `lendIdle` is read
by spot placement (capacity.placers.lend), `spotNotice` and `spotMinRuntime` by preemption
(capacity.placers.notice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from capacity.access import Scope, pool_for
from capacity.models import PoolPolicy
from capacity.models.policy import APPROVAL_HOLD, OnError
from capacity.placement import INVALID_INPUT, NOT_FOUND, CapacityError
from inventory.models import Pool
from trail.record import record

from .inputs import duration_text, parse_duration
from .outside_check import check_secret, check_webhook_url, new_secret

# API name -> (attribute, kind); kinds: "duration" (text or null), "bool", "int" (a positive whole
# number or null). The limits (maxDuration, maxLeadTime, maxFutureGpuHours) are checked by
# policy.limits; null is no limit.
FIELDS: dict[str, tuple[str, str]] = {
    "idleWarnAfter": ("idle_warn_after", "duration"),
    "idleReleaseAfter": ("idle_release_after", "duration"),
    "allowKeepWhenIdle": ("allow_keep_when_idle", "bool"),
    "lendIdle": ("lend_idle", "bool"),
    "spotNotice": ("spot_notice", "duration"),
    "spotMinRuntime": ("spot_min_runtime", "duration"),
    "maxDuration": ("max_duration", "duration"),
    "maxLeadTime": ("max_lead_time", "duration"),
    "maxFutureGpuHours": ("max_future_gpu_hours", "int"),
    "approvalAboveGpuHours": ("approval_above_gpu_hours", "int"),
    "approvalHold": ("approval_hold", "hold"),
    "policyWebhook": ("policy_webhook", "url"),
    "policyWebhookOnError": ("policy_webhook_on_error", "on_error"),
}
# Write-only: a PUT may set the outside check's secret; no GET shows it (services.outside_check).
SECRET = "policyWebhookSecret"
MAX_GPU_HOURS = 10**9


@dataclass(frozen=True)
class Policy:
    """A pool's policy as read: its row, or the defaults (`stored` False) when it has none."""

    idle_warn_after: timedelta | None
    idle_release_after: timedelta | None
    allow_keep_when_idle: bool = True
    lend_idle: bool = False
    spot_notice: timedelta | None = None
    spot_min_runtime: timedelta | None = None
    max_duration: timedelta | None = None
    max_lead_time: timedelta | None = None
    max_future_gpu_hours: int | None = None
    approval_above_gpu_hours: int | None = None
    approval_hold: timedelta = APPROVAL_HOLD
    policy_webhook: str | None = None
    policy_webhook_secret: str = ""
    policy_webhook_on_error: str = OnError.DENY
    stored: bool = False


def defaults() -> Policy:
    """Return the policy of a pool without a row: the site's idle settings, nothing else on."""
    return Policy(idle_warn_after=settings.IDLE_AFTER, idle_release_after=settings.IDLE_RELEASE_AFTER)


# The policy's fields as the model names them (every Policy field but `stored`).
_ATTRS = tuple(f.name for f in fields(Policy) if f.name != "stored")


def _from_row(row: PoolPolicy) -> Policy:
    return Policy(**{name: getattr(row, name) for name in _ATTRS}, stored=True)


def row_body(row: PoolPolicy) -> dict[str, Any]:
    """Return a policy row as the API writes it (what the audit keeps before and after a change)."""
    return policy_body(_from_row(row))


def policy_of(pool: Pool | int) -> Policy:
    """Return the pool's policy (the defaults when it has no row)."""
    pk = pool if isinstance(pool, int) else pool.pk
    row = PoolPolicy.objects.filter(pool_id=pk).first()
    return defaults() if row is None else _from_row(row)


def stored_policies() -> dict[int, Policy]:
    """Return pool pk -> policy for every pool with a row (the idle check reads them once a round)."""
    return {row.pool_id: _from_row(row) for row in PoolPolicy.objects.all()}


def parse_policy(data: object) -> dict[str, Any]:
    """Return attribute -> value for the fields a PUT names, or raise INVALID_INPUT naming the field."""
    if not isinstance(data, dict):
        raise CapacityError(INVALID_INPUT, "the request must be a JSON object")
    unknown = sorted(set(data) - set(FIELDS) - {SECRET})
    if unknown:
        raise CapacityError(INVALID_INPUT, f"unknown field {unknown[0]!r} (expected {', '.join(FIELDS)})")
    changes: dict[str, Any] = {}
    for name, value in data.items():
        if name == SECRET:
            changes["policy_webhook_secret"] = check_secret(value)
            continue
        attr, kind = FIELDS[name]
        if kind == "on_error":
            if value not in OnError.values:
                raise CapacityError(INVALID_INPUT, f"{name} must be allow or deny")
            changes[attr] = value
        elif kind == "hold":
            if not isinstance(value, str):
                raise CapacityError(INVALID_INPUT, f"{name} must be a duration such as 24h")
            changes[attr] = parse_duration(value.strip(), name)
        elif kind == "url":
            changes[attr] = None if value is None else check_webhook_url(value, name)
        elif kind == "bool":
            if not isinstance(value, bool):
                raise CapacityError(INVALID_INPUT, f"{name} must be true or false")
            changes[attr] = value
        elif value is None:
            changes[attr] = None
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_GPU_HOURS:
                raise CapacityError(
                    INVALID_INPUT, f"{name} must be a whole number of GPU-hours above 0, or null (no limit)"
                )
            changes[attr] = value
        else:
            if not isinstance(value, str):
                raise CapacityError(INVALID_INPUT, f"{name} must be a duration such as 2h, or null (off)")
            changes[attr] = parse_duration(value.strip(), name)
    return changes


def visible_policy(scope: Scope, pool_slug: str) -> tuple[Pool, Policy]:
    """Return a pool the caller may read and its policy; NOT_FOUND for any other pool."""
    pool = pool_for(scope, pool_slug)
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    return pool, policy_of(pool)


def set_policy(pool_slug: str, changes: dict[str, Any]) -> Policy:
    """Change the named fields of a pool's policy (operators), creating its row from the defaults."""
    pool = Pool.objects.filter(slug=pool_slug).first()
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {pool_slug}")
    with transaction.atomic():
        row = PoolPolicy.objects.select_for_update().filter(pool=pool).first()
        if row is None:
            start = defaults()
            row = PoolPolicy(pool=pool, **{name: getattr(start, name) for name in _ATTRS})
        before = policy_body(_from_row(row))
        for attr, value in changes.items():
            setattr(row, attr, value)
        # An outside check gets a secret of its own the first time it is set (shown in this answer).
        if row.policy_webhook and not row.policy_webhook_secret:
            row.policy_webhook_secret = new_secret()
        row.save()
        record_policy_change(pool.slug, before, policy_body(_from_row(row)))
    return _from_row(row)


def record_policy_change(pool_slug: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Record the fields of a pool's policy that changed (none: no row), in the caller's transaction."""
    changed = sorted(name for name in after if before.get(name) != after[name])
    if changed:
        record(
            "policy.set",
            f"policy:{pool_slug}",
            before={name: before.get(name) for name in changed},
            after={name: after[name] for name in changed},
        )


def put_body(pool_slug: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Change a pool's policy and return the PUT's answer: the policy, and the check's secret when
    this PUT set or made it (it is shown nowhere else)."""
    before = policy_of(Pool.objects.filter(slug=pool_slug).values_list("pk", flat=True).first() or 0)
    policy = set_policy(pool_slug, changes)
    body = policy_body(policy)
    if policy.policy_webhook_secret and policy.policy_webhook_secret != before.policy_webhook_secret:
        body[SECRET] = policy.policy_webhook_secret
    return body


def policy_body(policy: Policy) -> dict[str, Any]:
    """Return the policy as the API writes it: camelCase, durations as text, null for off."""
    body: dict[str, Any] = {}
    for name, (attr, kind) in FIELDS.items():
        value = getattr(policy, attr)
        body[name] = duration_text(value) if kind in ("duration", "hold") and value is not None else value
    return body


def check_keep_when_idle(pool: Pool | int, pool_slug: str) -> None:
    """Refuse keepWhenIdle in a pool whose policy does not allow keeping idle bookings (INVALID_INPUT)."""
    if not policy_of(pool).allow_keep_when_idle:
        raise CapacityError(
            INVALID_INPUT,
            f"keepWhenIdle: pool {pool_slug} does not allow keeping idle bookings (its policy's allowKeepWhenIdle is false)",
        )
