"""A pool's policy as booking reads it (docs/policy.md): the row, or the site's defaults.

A pool without a row reads the defaults, which are the site's settings (IDLE_AFTER,
IDLE_RELEASE_AFTER): exactly what the idle check did before pools had policies. The policy app
owns the rows (policy.models.PoolPolicy) and parses, writes and shows them (policy.pool_policy);
booking reads the table by name, as the pool's lookup does (capacity.placers.loader), so capacity
never imports that app. `lendIdle` is read by spot placement (policy.lending), `spotNotice` and
`spotMinRuntime` by preemption (policy.notice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta

from django.conf import settings
from django.db import connection

from inventory.models import Pool

# How long a booking waits for an operator's decision when the pool's policy names no hold.
APPROVAL_HOLD = timedelta(hours=24)


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
    policy_webhook_on_error: str = "deny"  # policy.models.OnError.DENY
    policy_webhook_concurrency: int | None = None
    stored: bool = False


def defaults() -> Policy:
    """Return the policy of a pool without a row: the site's idle settings, nothing else on."""
    return Policy(idle_warn_after=settings.IDLE_AFTER, idle_release_after=settings.IDLE_RELEASE_AFTER)


# The policy's fields as the model names them (every Policy field but `stored`).
ATTRS = tuple(f.name for f in fields(Policy) if f.name != "stored")
# The rows, one column per field (the table keeps its name from when capacity owned it).
_ROWS_SQL = f'SELECT pool_id, {", ".join(ATTRS)} FROM "capacity_poolpolicy"'


def _read(where: str = "", params: tuple = ()) -> dict[int, Policy]:
    with connection.cursor() as cur:
        cur.execute(_ROWS_SQL + where, params)
        return {pool: Policy(*values, stored=True) for pool, *values in cur.fetchall()}


def policy_of(pool: Pool | int) -> Policy:
    """Return the pool's policy (the defaults when it has no row)."""
    pk = pool if isinstance(pool, int) else pool.pk
    return _read(" WHERE pool_id = %s", (pk,)).get(pk) or defaults()


def stored_policies() -> dict[int, Policy]:
    """Return pool pk -> policy for every pool with a row (the idle check reads them once a round)."""
    return _read()
