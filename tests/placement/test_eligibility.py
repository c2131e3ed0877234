"""The eligibility table: exact reasons, buckets, order, and dedications."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.placement import (
    DEDICATED_PREFIX,
    Ineligibility,
    NodeView,
    Pool,
    dedication_reason,
    ineligibility,
    may_be_schedulable,
)

POOL = Pool("pool-1", owner_tenant_id=None)
HEALTHY = NodeView(id="n1", pool_id="pool-1")

# Every eligibility row, in the spec's order: the change that trips it, its reason and its bucket.
ROWS: list[tuple[dict[str, Any], str, str | None]] = [
    ({"pool_id": "pool-2"}, "in another pool", None),
    ({"role": "controller"}, "role controller", "excluded"),
    ({"trust": "tenant-controlled"}, "tenant-controlled nodes add no capacity", "excluded"),
    ({"owner_tenant_id": "acme"}, "tenant-owned node outside its owner's pool", "excluded"),
    ({"maintenance": True}, "in maintenance", "maintenance"),
    ({"cordoned": True}, "cordoned", "cordoned"),  # its own bucket (issue 18), not maintenance
    ({"provision_state": "provisioning"}, "provision state provisioning", "provisioning"),
    ({"converged": False}, "awaiting its first converged spec", "provisioning"),
    ({"connectivity": "disconnected"}, "connectivity disconnected", "unreachable"),
    ({"no_schedule_reasons": ("NotReady", "gpu-xid=79")}, "NoSchedule: NotReady, gpu-xid=79", "unhealthy"),
]


def test_a_healthy_host_in_its_pool_is_eligible() -> None:
    assert ineligibility(HEALTHY, POOL) is None
    assert may_be_schedulable(HEALTHY, POOL)


@pytest.mark.parametrize(("change", "reason", "bucket"), ROWS, ids=[r[1] for r in ROWS])
def test_each_row_reports_its_exact_reason_and_bucket(
    change: dict[str, Any], reason: str, bucket: str | None
) -> None:
    node = dataclasses.replace(HEALTHY, **change)
    assert ineligibility(node, POOL, "acme") == Ineligibility("eligible", reason, bucket)


def test_a_node_failing_every_check_reports_them_in_table_order() -> None:
    node = HEALTHY
    for change, _, _ in ROWS:
        node = dataclasses.replace(node, **change)
    seen = []
    for change, _, _ in ROWS:
        found = ineligibility(node, POOL, "acme")
        assert found is not None
        seen.append(found.reason)
        node = dataclasses.replace(node, **{k: getattr(HEALTHY, k) for k in change})
    assert seen == [reason for _, reason, _ in ROWS]
    assert ineligibility(node, POOL, "acme") is None


@pytest.mark.parametrize("role", ["controller", "gateway", "storage"])
def test_any_role_but_host_is_named(role: str) -> None:
    found = ineligibility(dataclasses.replace(HEALTHY, role=role), POOL)
    assert found is not None and found.reason == f"role {role}"


@pytest.mark.parametrize("state", ["provisioning", "retiring", "failed"])
def test_any_provision_state_but_active_is_named(state: str) -> None:
    found = ineligibility(dataclasses.replace(HEALTHY, provision_state=state), POOL)
    assert found is not None and found.reason == f"provision state {state}"


@pytest.mark.parametrize("connectivity", ["disconnected", "unknown"])
def test_any_connectivity_but_connected_is_named(connectivity: str) -> None:
    found = ineligibility(dataclasses.replace(HEALTHY, connectivity=connectivity), POOL)
    assert found is not None and found.reason == f"connectivity {connectivity}"


def test_a_tenant_owned_node_is_eligible_in_its_owners_pool() -> None:
    node = dataclasses.replace(HEALTHY, owner_tenant_id="acme")
    assert ineligibility(node, Pool("pool-1", owner_tenant_id="acme"), "acme") is None
    found = ineligibility(node, Pool("pool-1", owner_tenant_id="globex"), "acme")
    assert found is not None and found.reason == "tenant-owned node outside its owner's pool"


def test_a_dedication_is_tolerated_only_for_its_own_tenant() -> None:
    node = dataclasses.replace(HEALTHY, no_schedule_reasons=("dedicated=acme",))
    assert ineligibility(node, POOL, "acme") is None
    assert ineligibility(node, POOL, "globex") == Ineligibility(
        "eligible", "NoSchedule: dedicated=acme", "unhealthy"
    )
    assert ineligibility(node, POOL) == Ineligibility("eligible", "NoSchedule: dedicated=acme", "unhealthy")


def test_a_dedication_does_not_hide_other_reasons() -> None:
    node = dataclasses.replace(HEALTHY, no_schedule_reasons=("dedicated=acme", "NotReady"))
    assert ineligibility(node, POOL, "acme") == Ineligibility("eligible", "NoSchedule: NotReady", "unhealthy")
    other = dataclasses.replace(HEALTHY, no_schedule_reasons=("dedicated=acme", "dedicated=globex"))
    found = ineligibility(other, POOL, "acme")
    assert found is not None and found.reason == "NoSchedule: dedicated=globex"


def test_dedication_reason_uses_the_prefix() -> None:
    assert DEDICATED_PREFIX == "dedicated="
    assert dedication_reason("acme") == "dedicated=acme"


def test_may_be_schedulable_allows_no_reason_or_one_dedication_alone() -> None:
    def with_reasons(*reasons: str) -> NodeView:
        return dataclasses.replace(HEALTHY, no_schedule_reasons=reasons)

    assert may_be_schedulable(with_reasons(), POOL)
    assert may_be_schedulable(with_reasons("dedicated=acme"), POOL)
    assert not may_be_schedulable(with_reasons("NotReady"), POOL)
    assert not may_be_schedulable(with_reasons("dedicated=acme", "NotReady"), POOL)
    assert not may_be_schedulable(with_reasons("dedicated=acme", "dedicated=globex"), POOL)
    assert not may_be_schedulable(dataclasses.replace(with_reasons(), cordoned=True), POOL)


REASONS = st.lists(
    st.sampled_from(["NotReady", "gpu-xid=79", "dedicated=acme", "dedicated=globex", "dedicated=initech"]),
    max_size=4,
)


@given(REASONS, st.booleans())
def test_may_be_schedulable_means_schedulable_for_some_tenant(reasons: list[str], cordoned: bool) -> None:
    node = dataclasses.replace(HEALTHY, no_schedule_reasons=tuple(reasons), cordoned=cordoned)
    tenants = [None, "acme", "globex", "initech", "umbrella"]
    assert may_be_schedulable(node, POOL) == any(ineligibility(node, POOL, t) is None for t in tenants)
