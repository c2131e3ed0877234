"""The shares of a what-if run's sides: read from `--shares TENANT=GUARANTEED[:BORROW[:LEND]]`, or the pool's.

The baseline places under the pool's stored shares (none: as a pool without shares places); the
changed side under the run's `--shares` when given (a tenant not named is guaranteed 0), else
under the pool's too. Figures are whole GPUs, as the pool's shares keep them (docs/shares.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import connection

from capacity.port import (
    INVALID_INPUT,
    CapacityError,
)
from inventory.models import Tenant
from policy.share_verdict import Share, gpus_text

# The pool's share rows by tenant. The policy app owns them (policy.models.PoolShare), which what if
# may not import (tests/test_import_contracts.py): read by table name, as placement reads them.
_STORED_SQL = """
SELECT t.slug, s.guaranteed_gpus, s.borrowing_limit_gpus, s.lending_limit_gpus
  FROM "capacity_poolshare" s
  JOIN inventory_pool p ON p.id = s.pool_id
  JOIN inventory_tenant t ON t.id = s.tenant_id
 WHERE p.slug = %s
 ORDER BY t.slug
"""
# (tenant, guaranteed, borrowing limit or None, lending limit or None), as the run keeps them.
ShareSpec = tuple[str, int, int | None, int | None]
MAX_SHARES = 100  # tenants one run may name


def parse_shares(items: Iterable[str]) -> tuple[ShareSpec, ...]:
    """Read TENANT=GUARANTEED[:BORROW[:LEND]] items (an empty BORROW or LEND: no limit, all lent)."""
    out: list[ShareSpec] = []
    for item in (i.strip() for i in items):
        tenant, eq, figures = item.partition("=")
        parts = figures.split(":")
        if not eq or not tenant.strip() or len(parts) > 3:
            raise CapacityError(INVALID_INPUT, f"--shares: {item!r} is not TENANT=GUARANTEED[:BORROW[:LEND]]")
        numbers = [_whole(p.strip(), item, may_be_empty=n > 0) for n, p in enumerate(parts)]
        numbers += [None] * (3 - len(numbers))
        out.append((tenant.strip(), numbers[0], numbers[1], numbers[2]))
    names = [spec[0] for spec in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CapacityError(INVALID_INPUT, f"--shares: {twice[0]!r} is named more than once")
    if len(out) > MAX_SHARES:
        raise CapacityError(INVALID_INPUT, f"--shares: at most {MAX_SHARES} tenants")
    return tuple(out)


def _whole(text: str, item: str, *, may_be_empty: bool) -> int | None:
    if not text and may_be_empty:
        return None
    if not text.isascii() or not text.isdigit():
        raise CapacityError(
            INVALID_INPUT, f"--shares: {item!r}: {text!r} is not a whole number of GPUs, 0 or more"
        )
    if int(text) > 10**9:
        raise CapacityError(INVALID_INPUT, f"--shares: {item!r}: at most 1000000000 GPUs")
    return int(text)


def check_shares(specs: tuple[ShareSpec, ...], capacity: float) -> None:
    """Refuse a tenant Berth does not know, or guarantees past the changed pool's GPUs (INVALID_INPUT)."""
    if not specs:
        return
    names = [spec[0] for spec in specs]
    known = set(Tenant.objects.filter(slug__in=names).values_list("slug", flat=True))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CapacityError(INVALID_INPUT, f"--shares: no tenant {unknown[0]!r}")
    total = sum(spec[1] for spec in specs)
    if total > capacity + 1e-6:
        raise CapacityError(
            INVALID_INPUT,
            f"--shares: the guarantees add up to {total:,} GPUs; the changed pool has {gpus_text(capacity)}",
        )


def stored_specs(pool_slug: str) -> tuple[ShareSpec, ...]:
    """Return the pool's stored shares, by tenant."""
    with connection.cursor() as cur:
        cur.execute(_STORED_SQL, [pool_slug])
        return tuple(cur.fetchall())


def as_shares(specs: tuple[ShareSpec, ...]) -> dict[str, Share] | None:
    """Return the specs as the verdict reads them; None when there are none (a pool without shares)."""
    if not specs:
        return None
    return {tenant: Share(float(g), _float(b), _float(lend)) for tenant, g, b, lend in specs}


def shares_rows(shares: Mapping[str, Share] | None) -> list[dict]:
    """Return the shares a side placed under, as the answer shows them."""
    return [
        {
            "tenant": tenant,
            "guaranteedGpus": _int(s.guaranteed),
            "borrowingLimitGpus": _int(s.borrowing_limit),
            "lendingLimitGpus": _int(s.lending_limit),
        }
        for tenant, s in sorted((shares or {}).items())
    ]


def spec_text(spec: ShareSpec) -> str:
    """Return a spec as the option reads: acme=500, globex=300:100, initech=200::50."""
    tenant, guaranteed, borrow, lend = spec
    text = f"{tenant}={guaranteed}"
    if lend is not None:
        return f"{text}:{'' if borrow is None else borrow}:{lend}"
    return text if borrow is None else f"{text}:{borrow}"


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
