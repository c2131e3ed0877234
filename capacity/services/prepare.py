"""The one prelude of every request that names a booking: prepared once, then routed.

Reserve, preview, earliest start, the never-fits check and the port all start the same way: the
time, the settings, the caller's input normalized and validated (INVALID_INPUT before any lock),
the tenant and the pool looked up and checked against the caller, and a gang lease checked
against the pool's size and the request against the pool's rules before any lock (capacity.rules).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from capacity import rules
from capacity.access import Scope
from capacity.conf import placer_config
from capacity.placement import INVALID_INPUT, CapacityError, PlacementRequest, validate_request
from capacity.placers.index import pool_index
from capacity.placers.loader import PoolRow
from capacity.placers.types import PlacerConfig
from inventory.models import Tenant

from . import lookups
from .inputs import normalize


@dataclass(frozen=True)
class Prepared:
    """A request made ready once: its time, settings, core fields, validated request, tenant and pool.

    `extra` holds capacity's own fields (idempotency_key, binding, wait_ms, keep_when_idle: the pool's
    BEFORE_LOCK rules that ask read it); `digest` is set when
    the tenant and pool were kept from an earlier request and must still hold at the insert.
    """

    now: datetime
    config: PlacerConfig
    core: dict[str, Any]
    extra: dict[str, Any]
    request: PlacementRequest
    tenant: Tenant
    pool: PoolRow
    digest: str | None = None


def prepare(
    data: Mapping[str, Any],
    *,
    scope: Scope,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
    node_labels: Mapping[str, str] | None = None,
    owner_allowed: bool = False,
    ignore: tuple[str, ...] = (),
    kept: bool | None = None,
) -> Prepared:
    """Return the request prepared; raise CapacityError for bad input or a tenant or pool not the caller's.

    `ignore` names input fields another step reads (a horizon, a wait). `kept` None reads the
    tenant and pool afresh; True may take the ones an earlier request kept, False reads and keeps
    them (a lease always reads afresh: what it charges depends on the node it takes).
    """
    now = now or timezone.now()
    config = config or placer_config()
    if ignore and isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k not in ignore}
    core, extra = normalize(data, now=now, node_labels=node_labels, owner_allowed=owner_allowed)
    request = validate_request(core)
    digest = None
    if kept is None or request.lease:
        tenant, pool = lookups.tenant_and_pool(request, scope)
    else:
        tenant, pool, digest = lookups.kept_tenant_and_pool(request, scope, use_kept=kept)
    check_gang_size(request, pool)
    try:
        rules.before_lock(request, pool, now, extra)
    except CapacityError:
        if digest is None:
            raise
        # A limit a kept lookup carried may have been lifted since: refuse only on one read now.
        lookups.forget(request.tenant_id, request.pool_id)
        tenant, pool, digest = lookups.kept_tenant_and_pool(request, scope, use_kept=False)
        rules.before_lock(request, pool, now, extra)
    return Prepared(now, config, core, extra, request, tenant, pool, digest)


def afresh(prepared: Prepared, scope: Scope) -> Prepared:
    """Return the prepared request with its tenant and pool read now, and kept for the next request.

    For a request whose kept lookup went stale: its input, validation, time and settings stay.
    """
    lookups.forget(prepared.request.tenant_id, prepared.request.pool_id)
    tenant, pool, _ = lookups.kept_tenant_and_pool(prepared.request, scope, use_kept=False)
    check_gang_size(prepared.request, pool)
    rules.before_lock(prepared.request, pool, prepared.now, prepared.extra)
    return dataclasses.replace(prepared, tenant=tenant, pool=pool, digest=None)


def check_gang_size(request: PlacementRequest, pool: PoolRow) -> None:
    """Refuse a gang lease of more nodes than the pool holds: no booking could ever place it."""
    if request.lease and request.gang is not None:
        nodes = len(pool_index(pool).nodes.views)
        if request.gang.size > nodes:
            raise CapacityError(
                INVALID_INPUT,
                f"gang.size: a gang lease of {request.gang.size} nodes is larger than pool "
                f"{request.pool_id} ({nodes} nodes)",
            )
