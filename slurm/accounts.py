"""The bridge's rules at booking, before any lock: only whole nodes where the pool says so, and only a
tenant with a Slurm account.

A bridged pool has capacity's pool rules `slurm` on (and `slurm.whole-nodes` when it takes whole
nodes only), kept in step with its bridge by slurm/apps.py and read with the pool by its lookup: a
pool that is not bridged runs no code and sends no statement for them. The whole-node rule needs
nothing more (BEFORE_LOCK: previews are refused too); the account is one read at each create
(BEFORE_CREATE, no transaction open).
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from capacity.port import POLICY_LIMIT, CapacityError, Rule

from .scontrol import ACCOUNT_RE

NAME = "slurm"
WHOLE_NODES = "slurm.whole-nodes"

_ACCOUNT_SQL = """
SELECT b.accounts_required,
       (SELECT a.account FROM slurm_slurmaccount a JOIN inventory_tenant t ON t.id = a.tenant_id
         WHERE a.pool_id = b.pool_id AND t.slug = %(tenant)s)
  FROM slurm_bridgedpool b WHERE b.pool_id = %(pool)s AND b.enabled
"""


def where_to_map(pool_slug: str, tenant_slug: str) -> str:
    return (
        f"set it on the pool page's Slurm section, PUT /api/v1/pools/{pool_slug}/slurm/accounts/{tenant_slug}"
        " or in the admin"
    )


def missing_account(pool_slug: str, tenant_slug: str, row: tuple | None) -> str | None:
    """Return why the tenant may not book in the bridged pool (no usable account), or None."""
    if row is None:
        return None  # the bridge was switched off since the lookup
    required, account = row
    if account is not None:
        return None
    if required:
        return (
            f"pool {pool_slug} is bridged to Slurm and needs a Slurm account mapping for tenant"
            f" {tenant_slug}; there is none ({where_to_map(pool_slug, tenant_slug)})"
        )
    if not ACCOUNT_RE.match(tenant_slug):
        return (
            f"pool {pool_slug} is bridged to Slurm and tenant {tenant_slug}'s slug is not a Slurm account:"
            f" it needs a Slurm account mapping ({where_to_map(pool_slug, tenant_slug)})"
        )
    return None


def check_account(prepared, identity: str) -> None:
    """Refuse (POLICY_LIMIT) a create by a tenant without a Slurm account in the bridged pool."""
    with connection.cursor() as cur:
        cur.execute(_ACCOUNT_SQL, {"pool": prepared.pool.pk, "tenant": prepared.tenant.slug})
        row = cur.fetchone()
    why = missing_account(prepared.pool.view.id, prepared.tenant.slug, row)
    if why is not None:
        raise CapacityError(POLICY_LIMIT, why)


def check_whole_nodes(request, pool, now: datetime) -> None:
    """Refuse (POLICY_LIMIT) a GPU-level request in a pool bridged for whole nodes only."""
    if not request.lease:
        raise CapacityError(
            POLICY_LIMIT,
            f"pool {pool.view.id} is bridged to Slurm for whole nodes only (Slurm reserves nodes, not GPUs):"
            ' book whole nodes (binding "node", a gang for several)',
        )


RULES = (
    Rule("slurm.whole-nodes", applies=lambda pool: WHOLE_NODES in pool.rules, before_lock=check_whole_nodes),
    Rule("slurm.account", applies=lambda pool: NAME in pool.rules, before_create=check_account),
)
