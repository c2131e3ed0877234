"""The SQL and ORM schedulability checks agree with the Python `ineligibility` on random node states."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from capacity.access import EVERYONE, Scope
from capacity.placement import NodeView, ineligibility, may_be_schedulable
from capacity.placement import Pool as PoolView
from capacity.placers.sql import MAY_BE_SCHEDULABLE, SCHEDULABLE_TOLERATING
from inventory.filtersets import filter_nodes
from inventory.models import Node, Tenant
from inventory.states import NAMES, node_states

REASONS = st.lists(
    st.sampled_from(["dedicated=acme", "dedicated=globex", "NotReady", "gpu-fault=xid79", "GpuXidErrors"]),
    unique=True,
    max_size=3,
)

STATES = st.fixed_dictionaries(
    {
        "role": st.sampled_from(Node.Role.values),
        "provision_state": st.sampled_from(Node.ProvisionState.values),
        "connectivity": st.sampled_from(Node.Connectivity.values),
        "trust": st.sampled_from(Node.Trust.values),
        "maintenance": st.booleans(),
        "cordoned": st.booleans(),
        "converged": st.booleans(),
        "owner": st.sampled_from([None, "acme", "globex"]),
        "pool_owner": st.sampled_from([None, "acme", "globex"]),
        "no_schedule_reasons": REASONS,
        "tenant": st.sampled_from(["acme", "globex", None]),
    }
)


def sql_says(predicate, node, tenant):
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {predicate} FROM inventory_node n JOIN inventory_pool p ON p.id = n.pool_id WHERE n.id = %(node)s",
            {"node": node.pk, "tenant": tenant},
        )
        return cur.fetchone()[0]


@pytest.fixture
def tenants(tenant, other_tenant):
    return {"acme": tenant, "globex": other_tenant}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=STATES)
# A tenant's node in a pool of no tenant, eligible otherwise: once NULL in SQL rather than false.
@example(
    state={
        "role": "host",
        "provision_state": "active",
        "connectivity": "connected",
        "trust": "operator",
        "maintenance": False,
        "cordoned": False,
        "converged": True,
        "owner": "acme",
        "pool_owner": None,
        "no_schedule_reasons": ["dedicated=acme"],
        "tenant": "acme",
    }
)
def test_sql_and_python_agree_on_schedulability(make_node, pool, tenants, state):
    node = Node.objects.filter(name="prop").first() or make_node("prop", gpus=0)
    pool.owner_tenant = tenants.get(state["pool_owner"])
    pool.save()
    fields = {
        k: state[k] for k in ("role", "provision_state", "connectivity", "trust", "maintenance", "cordoned")
    }
    Node.objects.filter(pk=node.pk).update(
        **fields,
        converged=state["converged"],
        owner_tenant=tenants.get(state["owner"]),
        no_schedule_reasons=state["no_schedule_reasons"],
    )
    view = NodeView(
        id="prop",
        pool_id=pool.slug,
        owner_tenant_id=state["owner"],
        converged=state["converged"],
        no_schedule_reasons=tuple(state["no_schedule_reasons"]),
        **fields,
    )
    pool_view = PoolView(id=pool.slug, owner_tenant_id=state["pool_owner"])
    python = ineligibility(view, pool_view, state["tenant"]) is None
    assert sql_says(SCHEDULABLE_TOLERATING, node, state["tenant"]) is python
    assert sql_says(MAY_BE_SCHEDULABLE, node, None) is may_be_schedulable(view, pool_view)
    # The node filter's "schedulable" state (pool page and API) is the same check as ORM conditions.
    listed = filter_nodes(Node.objects.filter(pk=node.pk), {"state": "schedulable"}, EVERYONE).exists()
    assert listed is may_be_schedulable(view, pool_view)
    # The state vocabulary: each state's filter (SQL) holds the nodes node_states (Python) puts in
    # it, for an operator and for a tenant; "schedulable" is the placer's check for that viewer.
    loaded = Node.objects.select_related("pool", "owner_tenant").prefetch_related("taints").get(pk=node.pk)
    for viewer in (None, state["tenant"]):
        scope = EVERYONE if viewer is None else Scope(frozenset({viewer}))
        python_states = {s.name for s in node_states(loaded, scope)}
        for name in NAMES:
            in_sql = filter_nodes(Node.objects.filter(pk=node.pk), {"state": name}, scope).exists()
            assert in_sql is (name in python_states), (name, viewer)
        placer = (
            may_be_schedulable(view, pool_view)
            if viewer is None
            else ineligibility(view, pool_view, viewer) is None
        )
        assert ("schedulable" in python_states) is placer
    # Rows written around the services leave the rollups behind; settle them for the audit.
    from capacity.rollups import refresh_rollups

    refresh_rollups([pool.pk])


def test_the_tenant_parameter_tolerates_only_its_own_dedication(make_node, tenants):
    node = make_node("n")
    Node.objects.filter(pk=node.pk).update(no_schedule_reasons=["dedicated=acme"])
    assert sql_says(SCHEDULABLE_TOLERATING, node, "acme") is True
    assert sql_says(SCHEDULABLE_TOLERATING, node, "globex") is False
    assert sql_says(SCHEDULABLE_TOLERATING, node, None) is False
    assert sql_says(MAY_BE_SCHEDULABLE, node, None) is True
    assert Tenant.objects.count() == 2


def test_the_node_filter_leaves_out_tenant_controlled_and_foreign_owned_nodes(make_node, pool, tenants):
    """
    open: an operator's node       tenant: trust tenant-controlled
    owned: owned by globex, in a pool globex does not own
    """
    make_node("open")
    Node.objects.filter(pk=make_node("tenant").pk).update(trust=Node.Trust.TENANT_CONTROLLED)
    Node.objects.filter(pk=make_node("owned").pk).update(owner_tenant=tenants["globex"])
    listed = filter_nodes(Node.objects.all(), {"state": "schedulable"}, EVERYONE)
    assert sorted(listed.values_list("name", flat=True)) == ["open"]
    from capacity.rollups import refresh_rollups

    refresh_rollups([pool.pk])
