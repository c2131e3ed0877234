"""How another Django app books a tenant's series, the way capacity's port books an instance.

    from series.port import reserve_series
    done = reserve_series(
        tenant="acme", pool="lab-pool", devices=[{"class": "gpu", "count": 1}],
        during={"start": "2027-01-04T09:00:00Z", "end": "2027-01-04T12:00:00Z"},
        repeat={"freq": "weekly", "byDay": ["MO"], "until": "2027-03-29"},
    )

A module that books a tenant's recurring time (a course's lab sessions for a term) gets the API's
`repeat` with the same rule, limits and answer (docs/series.md). Those are the tenant's
reservations, charged to its quota as the API charges them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from capacity.port import EVERYONE, PlacerConfig, request_body

from .book import SeriesNotPlaced, SeriesResult
from .book import reserve_series as _reserve_series

__all__ = ["SeriesNotPlaced", "SeriesResult", "reserve_series"]


def reserve_series(
    *,
    tenant: str,
    pool: str,
    during: Mapping[str, Any],
    repeat: Mapping[str, Any],
    devices: Sequence[Mapping[str, Any]] = (),
    resources: Mapping[str, int] | None = None,
    all_or_nothing: bool = False,
    idempotency_key: str | None = None,
    admission: Any = None,
    by: str = "",
    now: datetime | None = None,
    config: PlacerConfig | None = None,
) -> SeriesResult:
    """Book a tenant's series as the API does: one reservation per occurrence of `repeat` over `during`.

    Raises CapacityError as the API answers (INVALID_INPUT naming the field, POLICY_LIMIT, and
    SeriesNotPlaced for all_or_nothing), having written nothing.
    """
    data = request_body(
        tenant_id=tenant,
        pool_id=pool,
        devices=list(devices) or None,
        resources=dict(resources) if resources else None,
        during=dict(during),
        repeat=dict(repeat) if isinstance(repeat, Mapping) else repeat,
        all_or_nothing=all_or_nothing or None,
        idempotency_key=idempotency_key,
    )
    return _reserve_series(data, scope=EVERYONE, admission=admission, now=now, config=config, by=by)
