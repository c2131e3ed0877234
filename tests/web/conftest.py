"""Fixtures for the browser views: users in their roles, logged-in clients, small labs, bookings made through services."""

import pytest

from page_people import (  # noqa: F401  (fixtures, shared with tests/whatif)
    acme_user,
    alice,
    bob,
    globex_user,
    op,
    operator,
    operators_group,
)


@pytest.fixture
def two_hosts(make_node, tenant, other_tenant):
    """node-a and node-b in lab-pool, 4 GPUs each; tenants acme and globex.

    Bookings land on node-a first (ties go by name).
    """
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


@pytest.fixture
def three_hosts_with_scalars(make_node, tenant, other_tenant):
    """node-a, node-b and node-c in lab-pool: 4 GPUs, vcpu 64 and memoryGiB 512 each; tenants acme and globex."""
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=4, vcpu=64, memory=512)


@pytest.fixture
def book():
    """Return a function that books through the services (the audit needs real bookings), starting now.

    Without the random top-N pick, so tests know the node: the fullest that fits, ties on name.
    """
    import dataclasses

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)

    def reserve(tenant="acme", gpus=1, pool="lab-pool", duration="1d", **extra):
        data = {
            "tenantId": tenant,
            "poolId": pool,
            "devices": [{"class": "gpu", "count": gpus}],
            "duration": duration,
            **extra,
        }
        return services.reserve(data, config=config).reservation

    return reserve
