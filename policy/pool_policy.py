"""A pool's policy as operators set it (docs/policy.md): parse a PUT, write the named fields, show it.

The first write creates the pool's row (policy.models.PoolPolicy) from the defaults (capacity's
read half, capacity.services.pool_policy), then applies what it names. Durations are written as the
API writes them elsewhere ("2h"); null is off. The form (policy.policy_section), the API (policy.api.pool_policy)
and the admin (policy.admin) write through here.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capacity.port import (
    ATTRS,
    INVALID_INPUT,
    NOT_FOUND,
    CapacityError,
    Policy,
    Scope,
    defaults,
    duration_text,
    parse_duration,
    policy_of,
    pool_for,
)
from inventory.models import Pool
from trail.record import record

from .check_cap import parse_cap
from .models import OnError, PoolPolicy
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
    "policyWebhookConcurrency": ("policy_webhook_concurrency", "cap"),
}
# Write-only: a PUT may set the outside check's secret; no GET shows it (policy.outside_check).
SECRET = "policyWebhookSecret"
MAX_GPU_HOURS = 10**9


def from_row(row: PoolPolicy) -> Policy:
    """Return a pool's policy row as booking reads it (capacity.services.pool_policy)."""
    return Policy(**{name: getattr(row, name) for name in ATTRS}, stored=True)


def row_body(row: PoolPolicy) -> dict[str, Any]:
    """Return a policy row as the API writes it (what the audit keeps before and after a change)."""
    return policy_body(from_row(row))


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
        elif kind == "cap":
            changes[attr] = parse_cap(value, name)
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
            row = PoolPolicy(pool=pool, **{name: getattr(start, name) for name in ATTRS})
        before = policy_body(from_row(row))
        for attr, value in changes.items():
            setattr(row, attr, value)
        # An outside check gets a secret of its own the first time it is set (shown in this answer).
        if row.policy_webhook and not row.policy_webhook_secret:
            row.policy_webhook_secret = new_secret()
        row.save()
        record_policy_change(pool.slug, before, policy_body(from_row(row)))
    return from_row(row)


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
