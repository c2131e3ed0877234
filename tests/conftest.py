"""Shared fixtures: small inventories built row by row."""

import pytest

from inventory.models import Device, Node, Pool, Site, Tenant


@pytest.fixture
def site(db):
    return Site.objects.create(slug="lab", name="Lab")


@pytest.fixture
def tenant(db):
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def pool(site):
    return Pool.objects.create(slug="lab-pool", name="Lab pool", site=site)


@pytest.fixture
def make_node(pool):
    """Return a factory for hosts with `gpus` whole GPUs named `<node>-gpu<i>`."""

    def make(name="node-a", gpus=2, **fields):
        node = Node.objects.create(name=name, pool=fields.pop("pool", pool), **fields)
        Device.objects.bulk_create(
            Device(node=node, uuid=f"GPU-{name}-{i}", index=i, numa_node=i // 4) for i in range(gpus)
        )
        return node

    return make
