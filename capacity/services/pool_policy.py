"""A pool's policy as booking reads it (docs/policy.md): the row, or the site's defaults.

A pool without a row reads the defaults, which are the site's settings (IDLE_AFTER,
IDLE_RELEASE_AFTER): exactly what the idle check did before pools had policies. The policy app
(policy.pool_policy) parses, writes and shows it; `lendIdle` is read by spot placement
(policy.lending), `spotNotice` and `spotMinRuntime` by preemption (policy.notice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta

from django.conf import settings

from capacity.models import PoolPolicy
from capacity.models.policy import APPROVAL_HOLD, OnError
from capacity.placement import INVALID_INPUT, CapacityError
from inventory.models import Pool


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
    policy_webhook_concurrency: int | None = None
    stored: bool = False


def defaults() -> Policy:
    """Return the policy of a pool without a row: the site's idle settings, nothing else on."""
    return Policy(idle_warn_after=settings.IDLE_AFTER, idle_release_after=settings.IDLE_RELEASE_AFTER)


# The policy's fields as the model names them (every Policy field but `stored`).
ATTRS = tuple(f.name for f in fields(Policy) if f.name != "stored")


def from_row(row: PoolPolicy) -> Policy:
    """Return a pool's policy row as read."""
    return Policy(**{name: getattr(row, name) for name in ATTRS}, stored=True)


def policy_of(pool: Pool | int) -> Policy:
    """Return the pool's policy (the defaults when it has no row)."""
    pk = pool if isinstance(pool, int) else pool.pk
    row = PoolPolicy.objects.filter(pool_id=pk).first()
    return defaults() if row is None else from_row(row)


def stored_policies() -> dict[int, Policy]:
    """Return pool pk -> policy for every pool with a row (the idle check reads them once a round)."""
    return {row.pool_id: from_row(row) for row in PoolPolicy.objects.all()}


def check_keep_when_idle(pool: Pool | int, pool_slug: str) -> None:
    """Refuse keepWhenIdle in a pool whose policy does not allow keeping idle bookings (INVALID_INPUT)."""
    if not policy_of(pool).allow_keep_when_idle:
        raise CapacityError(
            INVALID_INPUT,
            f"keepWhenIdle: pool {pool_slug} does not allow keeping idle bookings (its policy's allowKeepWhenIdle is false)",
        )
